package openai_test

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/openai"
)

// A streamed pass against a local OpenAI-compatible server (here the fake one; Ollama would be
// BaseURL "http://localhost:11434/v1"). No API key is needed for a server other than OpenAI's.
func Example() {
	srv := fakeserver.NewScript(fake.Turn{Deltas: []string{"Hello", ", world."}})
	defer srv.Close()

	model := openai.New(openai.Options{BaseURL: srv.URL()})
	resp, err := model.Generate(context.Background(), providers.Request{
		Model:    "llama3.2",
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Say hello"}},
	}, func(delta string) error {
		fmt.Printf("delta %q\n", delta)
		return nil
	})
	if err != nil {
		fmt.Println(contracts.CodeOf(err), err)
		return
	}
	fmt.Println(resp.Text)
	fmt.Println(resp.FinishReason.Unified, resp.Usage.Input, resp.Usage.Output)
	// Output:
	// delta "Hello"
	// delta ", world."
	// Hello, world.
	// stop 10 2
}

// Errors are classified once, by the provider: the activity retry policy reads Retryable and
// Details["retryAfterMs"].
func Example_errors() {
	srv := fakeserver.NewScript(fake.Turn{Err: &contracts.Error{
		Code: contracts.CodeProviderHTTPError, Status: 429, Message: "Rate limit reached.",
		Details: map[string]any{"retryAfterMs": 2000},
	}})
	defer srv.Close()

	model := openai.New(openai.Options{BaseURL: srv.URL()})
	_, err := model.Generate(context.Background(), providers.Request{
		Model:    "gpt-4.1-mini",
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}},
	}, nil)
	f := contracts.FailureOf(err)
	fmt.Println(f.Code, f.Status, f.Retryable, f.Details["retryAfterMs"])
	fmt.Println(f.Message)
	// Output:
	// PROVIDER_HTTP_ERROR 429 true 2000
	// OpenAI-compatible server returned 429 Too Many Requests: Rate limit reached.
}
