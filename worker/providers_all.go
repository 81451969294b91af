//go:build !kortyx_openaionly

package main

import (
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/app/allproviders"
)

// modelProviders are the providers after openai: google and anthropic (the default build links
// their SDKs; -tags kortyx_openaionly does not, see providers_openai.go).
func modelProviders() []app.ProviderFromEnv { return allproviders.FromEnv() }
