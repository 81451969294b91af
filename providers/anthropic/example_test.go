package anthropic_test

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/anthropic"
	"github.com/kortyx-go/kortyx/providers/anthropic/fakeanthropic"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// A streamed pass against the fake Messages endpoint (Anthropic's API would be
// anthropic.FromEnv() with ANTHROPIC_API_KEY set).
func Example() {
	srv := fakeanthropic.NewScript(fake.Turn{Deltas: []string{"Hello", ", world."},
		Usage: providers.Usage{Input: 120, Output: 2, CacheRead: 100}})
	defer srv.Close()

	model := anthropic.New(anthropic.Options{BaseURL: srv.URL(), APIKey: "test"})
	resp, err := model.Generate(context.Background(), providers.Request{
		Model: "claude-sonnet-4-5",
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "Be brief."},
			{Role: providers.RoleUser, Content: "Say hello"},
		},
		Options: providers.CallOptions{ProviderOptions: map[string]any{
			"anthropic": anthropic.ProviderOptions{CacheSystem: true},
		}},
	}, func(delta string) error {
		fmt.Printf("delta %q\n", delta)
		return nil
	})
	if err != nil {
		fmt.Println(contracts.CodeOf(err), err)
		return
	}
	fmt.Println(resp.Text)
	fmt.Println(resp.FinishReason.Unified, resp.FinishReason.Raw)
	fmt.Println(resp.Usage.Input, resp.Usage.CacheRead, resp.Usage.Output)
	fmt.Println(string(srv.Captured()[0].Field("system")))
	// Output:
	// delta "Hello"
	// delta ", world."
	// Hello, world.
	// stop end_turn
	// 120 100 2
	// [{"text":"Be brief.","cache_control":{"type":"ephemeral"},"type":"text"}]
}

// Errors are classified once, by the provider: the activity retry policy reads Retryable and
// Details["retryAfterMs"].
func Example_errors() {
	srv := fakeanthropic.NewScript(fake.Turn{Err: &contracts.Error{
		Code: contracts.CodeProviderHTTPError, Status: 529, Message: "Overloaded",
		Details: map[string]any{"retryAfterMs": 3000},
	}})
	defer srv.Close()

	model := anthropic.New(anthropic.Options{BaseURL: srv.URL(), APIKey: "test"})
	_, err := model.Generate(context.Background(), providers.Request{
		Model:    "claude-sonnet-4-5",
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}},
	}, nil)
	f := contracts.FailureOf(err)
	fmt.Println(f.Code, f.Status, f.Retryable, f.Details["retryAfterMs"], f.Details["type"])
	fmt.Println(f.Message)
	// Output:
	// PROVIDER_HTTP_ERROR 529 true 3000 overloaded_error
	// Anthropic API returned 529 Overloaded: Overloaded
}
