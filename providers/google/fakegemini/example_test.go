package fakegemini_test

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/google"
	"github.com/kortyx-go/kortyx/providers/google/fakegemini"
)

// A scripted tool loop through the real google provider.
func ExampleNewScript() {
	srv := fakegemini.NewScript(
		fake.Call("lookup_order", `{"orderId":"A-1"}`),
		fake.Text("Your order ships tomorrow."),
	)
	defer srv.Close()
	ctx := context.Background()
	model, err := google.New(ctx, google.Options{APIKey: "test", BaseURL: srv.URL()})
	if err != nil {
		fmt.Println(err)
		return
	}

	msgs := []providers.Message{{Role: providers.RoleUser, Content: "Where is A-1?"}}
	resp, _ := model.Generate(ctx, providers.Request{Model: "gemini-2.5-flash", Messages: msgs}, nil)
	call := resp.ToolCalls[0]
	fmt.Println(call.ID, call.Name, string(call.Arguments))

	msgs = append(msgs,
		providers.Message{Role: providers.RoleAssistant, ToolCalls: resp.ToolCalls, Continuation: resp.Continuation},
		providers.Message{Role: providers.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: "packed"},
	)
	resp, _ = model.Generate(ctx, providers.Request{Model: "gemini-2.5-flash", Messages: msgs}, nil)
	fmt.Println(resp.Text)

	last := srv.Requests()[1]
	fmt.Println(len(srv.Requests()), last.Messages[2].Role, last.Messages[2].ToolCallID, last.Messages[2].Content)
	// Output:
	// call-lookup_order-1 lookup_order {"orderId":"A-1"}
	// Your order ships tomorrow.
	// 2 tool call-lookup_order-1 packed
}
