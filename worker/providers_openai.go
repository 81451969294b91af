//go:build kortyx_openaionly

package main

import "github.com/kortyx-go/kortyx/app"

// modelProviders: this build (-tags kortyx_openaionly) links the OpenAI wire alone; google and
// anthropic are listed only to refuse their variables (see unlinked).
func modelProviders() []app.ProviderFromEnv { return unlinked() }
