//go:build !kortyx_allproviders

package main

import "github.com/kortyx-go/kortyx/app"

// allProviders: this build links the Anthropic and Google providers. The default build does
// not: the OpenAI wire alone keeps the first `go run ./starter` short; a demo with another
// provider's model runs the starter built with the tag kortyx_allproviders ([demoElsewhere]).
const allProviders = false

// demoProviders are the providers of the demo's worker after openai (OpenAI and
// OpenAI-compatible servers, which app.Run always configures): none.
func demoProviders() []app.ProviderFromEnv { return nil }
