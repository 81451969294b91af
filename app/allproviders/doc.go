// Package allproviders lists the model providers the Kortyx programs configure from the
// environment besides OpenAI and OpenAI-compatible servers (which package app always
// configures): Google (Gemini, Vertex AI) and Anthropic. Package app links the OpenAI wire
// alone, so that a program that needs no other provider (the starter's demo) does not compile
// the Anthropic and Google SDKs; a program that serves them passes [FromEnv] as
// [app.Options].Providers:
//
//	o := app.Options{Register: hello.Register, Providers: allproviders.FromEnv()}
//	if err := app.Run(ctx, app.ConfigFromEnv(), o); err != nil {
//		return err // no provider configured: the error names the variables to set
//	}
//
// A provider none of whose variables is set answers, in dev mode or with
// KORTYX_FAKE_MODELS=1, from the in-process fake model (package providers/fake) under its id.
package allproviders

import "github.com/kortyx-go/kortyx/app"

// FromEnv is the providers of the environment after openai, in the order [app.Run] registers
// them: google, anthropic.
func FromEnv() []app.ProviderFromEnv {
	return []app.ProviderFromEnv{googleFromEnv(), anthropicFromEnv()}
}
