package fakeserver_test

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/openai"
)

// A scripted tool loop through the real openai provider.
func ExampleNewScript() {
	srv := fakeserver.NewScript(
		fake.Call("lookup_order", `{"orderId":"A-1"}`),
		fake.Text("Your order ships tomorrow."),
	)
	defer srv.Close()
	model := openai.New(openai.Options{BaseURL: srv.URL()})
	ctx := context.Background()

	msgs := []providers.Message{{Role: providers.RoleUser, Content: "Where is A-1?"}}
	resp, _ := model.Generate(ctx, providers.Request{Model: "fake-model", Messages: msgs}, nil)
	call := resp.ToolCalls[0]
	fmt.Println(call.ID, call.Name, string(call.Arguments))

	msgs = append(msgs,
		providers.Message{Role: providers.RoleAssistant, ToolCalls: resp.ToolCalls},
		providers.Message{Role: providers.RoleTool, ToolCallID: call.ID, Content: `{"status":"packed"}`},
	)
	resp, _ = model.Generate(ctx, providers.Request{Model: "fake-model", Messages: msgs}, nil)
	fmt.Println(resp.Text)

	last := srv.Requests()[1]
	fmt.Println(len(srv.Requests()), last.Messages[2].Role, last.Messages[2].Name)
	// Output:
	// call-lookup_order-1 lookup_order {"orderId":"A-1"}
	// Your order ships tomorrow.
	// 2 tool lookup_order
}

// The canned responder answers any conversation, for demos without an API key.
func ExampleCanned() {
	srv := fakeserver.New(fakeserver.Canned())
	defer srv.Close()
	model := openai.New(openai.Options{BaseURL: srv.URL()})
	resp, _ := model.Generate(context.Background(), providers.Request{
		Model:    "any",
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello"}},
	}, func(string) error { return nil })
	fmt.Println(resp.Text)
	// Output: (fake model) You said: hello
}
