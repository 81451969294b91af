package fakeanthropic_test

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/anthropic"
	"github.com/kortyx-go/kortyx/providers/anthropic/fakeanthropic"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// A scripted tool loop through the real anthropic provider; the tool result reaches the
// Responder's view as a tool message named after its call.
func ExampleNewScript() {
	srv := fakeanthropic.NewScript(
		fake.Call("lookup_order", `{"orderId":"A-1"}`),
		fake.Text("Your order ships tomorrow."),
	)
	defer srv.Close()
	model := anthropic.New(anthropic.Options{BaseURL: srv.URL()})
	ctx := context.Background()

	msgs := []providers.Message{{Role: providers.RoleUser, Content: "Where is A-1?"}}
	resp, _ := model.Generate(ctx, providers.Request{Model: "claude-sonnet-4-5", Messages: msgs}, nil)
	call := resp.ToolCalls[0]
	fmt.Println(call.ID, call.Name, string(call.Arguments), resp.FinishReason.Raw)

	msgs = append(msgs,
		providers.Message{Role: providers.RoleAssistant, ToolCalls: resp.ToolCalls},
		providers.Message{Role: providers.RoleTool, ToolCallID: call.ID, Content: `{"status":"packed"}`},
	)
	resp, _ = model.Generate(ctx, providers.Request{Model: "claude-sonnet-4-5", Messages: msgs}, func(string) error { return nil })
	fmt.Println(resp.Text)

	last := srv.Requests()[1]
	fmt.Println(len(srv.Requests()), last.Stream, last.Messages[2].Role, last.Messages[2].Name)
	// Output:
	// call-lookup_order-1 lookup_order {"orderId":"A-1"} tool_use
	// Your order ships tomorrow.
	// 2 true tool lookup_order
}
