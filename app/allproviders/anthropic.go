package allproviders

import (
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/anthropic"
	"github.com/kortyx-go/kortyx/providers/anthropic/fakeanthropic"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// Anthropic is the "anthropic" provider: Anthropic's Messages API as ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL configure it, or, when neither is set and fakes are asked for, a fake
// Anthropic server playing the program's script, so that "anthropic:<model>" works without a key.
func Anthropic() app.ProviderFromEnv {
	return app.ProviderFromEnv{
		ID:  anthropic.ID,
		Env: []string{anthropic.EnvAPIKey, anthropic.EnvBaseURL},
		New: func() (providers.Provider, string, error) {
			p := anthropic.FromEnv()
			return p, p.BaseURL(), nil
		},
		Fake: func(respond fake.Responder) (providers.Provider, string, func()) {
			srv := fakeanthropic.New(respond)
			return anthropic.New(anthropic.Options{BaseURL: srv.URL()}), srv.URL(), srv.Close
		},
	}
}
