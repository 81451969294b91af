package app

import (
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/openai"
)

// ProviderIDs are the ids of the model providers [NewBackend] knows, in its order: those of
// the environment (openai, google, anthropic) and the in-process scripted fake.
func ProviderIDs() []string {
	ids := make([]string, 0, len(envProviders)+1)
	for _, e := range envProviders {
		ids = append(ids, e.ID)
	}
	return append(ids, fake.ID)
}

// CheckModel checks a default model name as [BackendOptions.Model] and KORTYX_MODEL take it
// ("provider:model", or a model of the openai provider) before anything starts: its provider
// must be one of [ProviderIDs] and the model must be named. The error (code
// PROVIDER_CONFIGURATION) lists the providers.
func CheckModel(name string) error {
	ref := contracts.Model(name)
	if ref.Provider == "" {
		ref.Provider = openai.ID
	}
	ids := ProviderIDs()
	example := "anthropic:claude-sonnet-4-5"
	known := false
	for _, id := range ids {
		known = known || id == ref.Provider
	}
	switch {
	case !known:
		return contracts.Errorf(contracts.CodeProviderConfiguration, "model %q: there is no provider %q; the providers are %s (e.g. %s)",
			name, ref.Provider, strings.Join(ids, ", "), example)
	case strings.TrimSpace(ref.Model) == "":
		return contracts.Errorf(contracts.CodeProviderConfiguration, "model %q names no model; write provider:model (e.g. %s)", name, example)
	}
	return nil
}
