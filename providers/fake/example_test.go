package fake_test

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// A scripted model plays one turn per pass: here a tool call, then a streamed answer. A pass
// after the last turn fails, so a test sees every extra model pass.
func Example() {
	model := fake.New(
		fake.Call("lookup_order", `{"orderId":"A-1"}`),
		fake.Text("Your order ships tomorrow."),
	)
	ctx := context.Background()
	req := providers.Request{Messages: []providers.Message{{Role: providers.RoleUser, Content: "Where is A-1?"}}}

	res, err := model.Generate(ctx, req, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.ToolCalls[0].ID, res.ToolCalls[0].Name, string(res.ToolCalls[0].Arguments), res.FinishReason.Unified)

	res, err = model.Generate(ctx, req, func(delta string) error {
		fmt.Printf("delta %q\n", delta)
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text, res.FinishReason.Unified)

	_, err = model.Generate(ctx, req, nil)
	fmt.Println(contracts.CodeOf(err), model.Calls())
	// Output:
	// call-lookup_order-1 lookup_order {"orderId":"A-1"} tool-calls
	// delta "Your "
	// delta "order "
	// delta "ships "
	// delta "tomorrow."
	// Your order ships tomorrow. stop
	// PROVIDER_INVALID_RESPONSE 3
}
