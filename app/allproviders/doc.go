// Package allproviders lists every model provider the Kortyx programs configure from the
// environment: OpenAI and OpenAI-compatible servers ([app.OpenAIFromEnv]), Google (Gemini, Vertex
// AI) and Anthropic. Package app links the OpenAI wire alone, so that a program that needs no
// other provider (the starter's demo) does not compile the Anthropic and Google SDKs; a program
// that serves them passes [FromEnv] as [app.BackendOptions].Providers:
//
//	opts, err := chosen.Backend()
//	if err != nil {
//		return err
//	}
//	opts.Providers = allproviders.FromEnv()
//	opts.FakeServers = cfg.DevMode() || cfg.FakeModels // no key: the scripted fake servers
//	backend, err := app.NewBackend(ctx, opts)
//	if err != nil {
//		return err // *app.NoProviderError names the variables to set
//	}
//	defer backend.Close()
package allproviders

import "github.com/kortyx-go/kortyx/app"

// FromEnv is every provider of the environment, in the order [app.NewBackend] registers them:
// openai, google, anthropic.
func FromEnv() []app.ProviderFromEnv {
	return []app.ProviderFromEnv{app.OpenAIFromEnv(), Google(), Anthropic()}
}
