//go:build kortyx_allproviders

package main

import (
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/app/allproviders"
)

// allProviders: this build links every provider (go build -tags kortyx_allproviders).
const allProviders = true

// demoProviders are the providers of the demo's worker after openai: google and anthropic.
func demoProviders() []app.ProviderFromEnv { return allproviders.FromEnv() }
