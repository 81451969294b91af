package google_test

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/google"
	"github.com/kortyx-go/kortyx/providers/google/fakegemini"
)

// A streamed pass with a thinking budget, against the fake Gemini server (with
// GEMINI_API_KEY exported, google.New(ctx, google.FromEnv()) reaches Gemini itself).
func Example() {
	srv := fakegemini.NewScript(fake.Turn{Deltas: []string{"Hello", ", world."},
		Usage: providers.Usage{Input: 8, Output: 3, Reasoning: 12, Total: 23}})
	defer srv.Close()

	ctx := context.Background()
	model, err := google.New(ctx, google.Options{APIKey: "test", BaseURL: srv.URL()})
	if err != nil {
		fmt.Println(contracts.CodeOf(err), err)
		return
	}
	resp, err := model.Generate(ctx, providers.Request{
		Model:    "gemini-2.5-flash",
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Say hello"}},
		Options: providers.CallOptions{ProviderOptions: map[string]any{
			google.ID: google.ProviderOptions{ThinkingBudget: ptr(1024)},
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
	fmt.Println(resp.FinishReason.Unified, resp.FinishReason.Raw, resp.Usage.Input, resp.Usage.Output, resp.Usage.Reasoning)
	fmt.Println(srv.Requests()[0].Options.ProviderOptions["google"])
	// Output:
	// delta "Hello"
	// delta ", world."
	// Hello, world.
	// stop STOP 8 3 12
	// map[thinkingBudget:1024]
}

// A safety block is a refusal naming the harm category.
func Example_refusal() {
	srv := fakegemini.NewScript(fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderRefusal,
		Details: map[string]any{"category": "HARM_CATEGORY_DANGEROUS_CONTENT"}}})
	defer srv.Close()

	ctx := context.Background()
	model, err := google.New(ctx, google.Options{APIKey: "test", BaseURL: srv.URL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = model.Generate(ctx, providers.Request{
		Model:    "gemini-2.5-flash",
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "…"}},
	}, nil)
	f := contracts.FailureOf(err)
	fmt.Println(f.Code, f.Retryable, f.Details["category"])
	// Output: PROVIDER_REFUSAL false HARM_CATEGORY_DANGEROUS_CONTENT
}
