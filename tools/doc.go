// Package tools defines the tools a model can call through hooks.Reason. Tools live on the
// worker, in Go: a name, a description, a JSON Schema for the input and an Execute function.
// Node code refers to them by name; every call runs as its own Temporal activity and receives an
// idempotency key that stays the same across retries and crash recovery.
//
//	lookup, err := tools.Func("lookup_order", "Look up an order by id.",
//		`{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}`,
//		func(ctx context.Context, call tools.Call, in struct{ OrderID string `json:"orderId"` }) (Order, error) {
//			return store.Order(ctx, in.OrderID)
//		})
//	if err != nil {
//		return err // a bad name or schema
//	}
//	set, err := tools.NewSet(lookup)
//	if err != nil {
//		return err // a name used twice or reserved for Kortyx
//	}
//	acts, err := activities.New(activities.Config{Stream: broker, Providers: models, Tools: set})
//
// [Set.Run] is what the tool activity calls: the package example runs a tool twice with one
// idempotency key, as a crash between the call and its recorded completion would.
package tools
