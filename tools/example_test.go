package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/tools"
)

// Payments is a payment provider that de-duplicates by idempotency key, as most do (an
// Idempotency-Key header); here a map.
type Payments struct {
	mu      sync.Mutex
	charges map[string]string // charge id by idempotency key
}

// Charge charges once per key: the same key again returns the first charge.
func (p *Payments) Charge(key string, cents int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.charges[key]; ok {
		return id
	}
	id := fmt.Sprintf("ch_%d", len(p.charges)+1)
	p.charges[key] = id
	return id
}

// A tool call is at least once: a worker that dies after the charge but before Temporal
// recorded the call's completion runs the tool again. The call's IdempotencyKey is the same on
// every execution, so passing it to the payment provider makes the charge happen once.
func ExampleCall_idempotencyKey() {
	pay := &Payments{charges: map[string]string{}}
	charge, err := tools.Func("charge", "Charge the customer.",
		`{"type":"object","properties":{"cents":{"type":"integer","minimum":1}},"required":["cents"]}`,
		func(ctx context.Context, call tools.Call, in struct {
			Cents int `json:"cents"`
		}) (map[string]any, error) {
			return map[string]any{"chargeId": pay.Charge(call.IdempotencyKey, in.Cents)}, nil
		})
	if err != nil {
		panic(err)
	}
	set, err := tools.NewSet(charge)
	if err != nil {
		panic(err)
	}
	call := protocol.ToolCallInput{Tool: "charge", ToolCallID: "c1", Input: json.RawMessage(`{"cents":1250}`),
		IdempotencyKey: "run-42:op-1:c1"}
	for range 2 { // the first execution, and the one after a crash
		res, err := set.Run(context.Background(), call)
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Content)
	}
	fmt.Println("charges made:", len(pay.charges))
	// Output:
	// {"chargeId":"ch_1"}
	// {"chargeId":"ch_1"}
	// charges made: 1
}
