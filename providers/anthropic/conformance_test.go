package anthropic_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/anthropic"
	"github.com/kortyx-go/kortyx/providers/anthropic/fakeanthropic"
	"github.com/kortyx-go/kortyx/providers/conformance"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// TestConformance runs the provider suite against the fake Anthropic Messages server.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Target{
		Name:      "anthropic",
		Model:     "claude-sonnet-4-5",
		NewServer: func(respond fake.Responder) conformance.Server { return fakeanthropic.New(respond) },
		// A failed tool result is a tool_result block with is_error: true, which fakeanthropic
		// decodes into IsError.
		ToolErrorFlag: true,
		NewProvider: func(baseURL string) providers.Provider {
			return anthropic.New(anthropic.Options{BaseURL: baseURL, APIKey: "test"})
		},
	})
}
