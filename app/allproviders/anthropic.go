package allproviders

import (
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/anthropic"
)

// anthropicFromEnv is the "anthropic" provider: Anthropic's Messages API as ANTHROPIC_API_KEY
// and ANTHROPIC_BASE_URL configure it.
func anthropicFromEnv() app.ProviderFromEnv {
	return app.ProviderFromEnv{
		ID:  anthropic.ID,
		Env: []string{anthropic.EnvAPIKey, anthropic.EnvBaseURL},
		New: func() (providers.Provider, string, error) {
			p := anthropic.FromEnv()
			return p, p.BaseURL(), nil
		},
	}
}
