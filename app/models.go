package app

import (
	"strings"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/openai"
)

// providerIDs are the ids of the model providers the programs know, in the order of their
// variables in the error of a worker without a provider: openai (this package), google and
// anthropic (package allproviders, which the worker links and the starter hands its demo to),
// and the in-process scripted fake.
func providerIDs() []string {
	// The ids of google and anthropic are written out: importing their packages would link
	// their SDKs into every program of this package.
	return []string{openai.ID, "google", "anthropic", fake.ID}
}

// CheckModel checks a default model name as [Options.Model] and KORTYX_MODEL take it
// ("provider:model", or a model of the openai provider) before anything starts: its provider
// must be one the programs know (openai, google, anthropic, fake) and the model must be named. The error (code
// PROVIDER_CONFIGURATION) lists the providers.
func CheckModel(name string) error {
	ref := providers.Model(name)
	if ref.Provider == "" {
		ref.Provider = openai.ID
	}
	ids := providerIDs()
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
