// Package support is an example agent: a support desk that looks orders up and refunds them
// after a human approves. The workflow is declarative (support.workflow.yaml, a built-in
// kortyx.reason node); the tools are Go ([Tools]); [FakeModel] plays the model offline.
package support

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
)

//go:embed support.workflow.yaml
var definition []byte

// WorkflowID is the id of the support workflow.
const WorkflowID = "support"

// Register adds the support workflow to reg.
func Register(reg *workflows.Registry) error {
	def, err := workflows.Load(definition)
	if err != nil {
		return err
	}
	return reg.Add(def)
}

// Order is an order of the demo shop.
type Order struct {
	ID     string  `json:"orderId"`
	Item   string  `json:"item"`
	Total  float64 `json:"total"`
	Status string  `json:"status"`
}

// Refund is a refund that was made.
type Refund struct {
	RefundID string  `json:"refundId"`
	OrderID  string  `json:"orderId"`
	Amount   float64 `json:"amount"`
}

// Store is the demo shop's data: a few orders and the refunds made, keyed by idempotency key so
// that a retried refund never pays twice.
type Store struct {
	mu      sync.Mutex
	orders  map[string]Order
	refunds map[string]Refund // by idempotency key
}

// NewStore returns a store with the demo orders A-1001 (delivered), A-1002 (shipped) and
// A-1003 (damaged).
func NewStore() *Store {
	return &Store{orders: map[string]Order{
		"A-1001": {ID: "A-1001", Item: "espresso machine", Total: 249, Status: "delivered"},
		"A-1002": {ID: "A-1002", Item: "coffee grinder", Total: 89.5, Status: "shipped"},
		"A-1003": {ID: "A-1003", Item: "milk frother", Total: 39, Status: "damaged"},
	}, refunds: map[string]Refund{}}
}

// Refunds returns the number of refunds made.
func (s *Store) Refunds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.refunds)
}

type orderInput struct {
	OrderID string `json:"orderId"`
}

type refundInput struct {
	OrderID string `json:"orderId"`
	Reason  string `json:"reason"`
}

// Tools returns the agent's tools over s: lookup_order and refund.
func Tools(s *Store) ([]tools.Tool, error) {
	lookup, err := tools.Func("lookup_order", "Look an order up by its id (like A-1001): item, total and status.",
		`{"type":"object","properties":{"orderId":{"type":"string","pattern":"^A-[0-9]+$"}},"required":["orderId"],"additionalProperties":false}`,
		func(ctx context.Context, call tools.Call, in orderInput) (Order, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			o, ok := s.orders[in.OrderID]
			if !ok {
				return Order{}, fmt.Errorf("no order %s", in.OrderID)
			}
			return o, nil
		})
	if err != nil {
		return nil, err
	}
	refund, err := tools.Func("refund", "Refund an order in full. Needs a human's approval.",
		`{"type":"object","properties":{"orderId":{"type":"string"},"reason":{"type":"string"}},"required":["orderId","reason"],"additionalProperties":false}`,
		func(ctx context.Context, call tools.Call, in refundInput) (Refund, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if r, done := s.refunds[call.IdempotencyKey]; done {
				return r, nil // the same call again: the same refund, not a second one
			}
			o, ok := s.orders[in.OrderID]
			if !ok {
				return Refund{}, fmt.Errorf("no order %s", in.OrderID)
			}
			if o.Status == "refunded" {
				return Refund{}, fmt.Errorf("order %s is already refunded", in.OrderID)
			}
			r := Refund{RefundID: fmt.Sprintf("R-%d", 5000+len(s.refunds)+1), OrderID: o.ID, Amount: o.Total}
			o.Status = "refunded"
			s.orders[o.ID] = o
			s.refunds[call.IdempotencyKey] = r
			return r, nil
		})
	if err != nil {
		return nil, err
	}
	return []tools.Tool{lookup, refund}, nil
}

var orderID = regexp.MustCompile(`\bA-[0-9]+\b`)

// FakeModel answers like a sensible support model would, from the conversation alone (it keeps
// no state, so it serves any number of runs): it looks the order up, refunds it when the
// customer asked for a refund and the order qualifies, and then answers.
func FakeModel() fake.Responder {
	return func(req providers.Request) fake.Turn {
		var ask string
		var results []providers.Message
		for _, m := range req.Messages {
			switch m.Role {
			case providers.RoleUser:
				ask = m.Content
			case providers.RoleTool:
				results = append(results, m)
			}
		}
		id := orderID.FindString(ask)
		wantsRefund := strings.Contains(strings.ToLower(ask), "refund")
		switch {
		case id == "":
			return fake.Text("Could you tell me your order number? It looks like A-1001.")
		case len(results) == 0:
			return fake.Call("lookup_order", fmt.Sprintf(`{"orderId":%q}`, id))
		}
		last := results[len(results)-1]
		// Over the OpenAI wire a tool message has no error flag: read the content, as a model would.
		if last.Name == "lookup_order" {
			if last.IsError || field(last.Content, "status") == "" {
				return fake.Text(fmt.Sprintf("I could not find order %s; please check the number.", id))
			}
			status := field(last.Content, "status")
			if wantsRefund && (status == "delivered" || status == "damaged") {
				return fake.Call("refund", fmt.Sprintf(`{"orderId":%q,"reason":%q}`, id, "customer request: "+status))
			}
			if wantsRefund {
				return fake.Text(fmt.Sprintf("Order %s is %s; I can refund it once it has been delivered.", id, status))
			}
			return fake.Text(fmt.Sprintf("Order %s (%s) is %s.", id, field(last.Content, "item"), status))
		}
		if last.IsError || field(last.Content, "refundId") == "" {
			return fake.Text(fmt.Sprintf("I have not refunded order %s: %s", id, last.Content))
		}
		return fake.Text(fmt.Sprintf("Done: order %s is refunded (%s, %s).", id, field(last.Content, "refundId"), "full amount"))
	}
}

// field reads a top-level string field of the JSON object in content.
func field(content, name string) string {
	var obj map[string]any
	_ = json.Unmarshal([]byte(content), &obj)
	s, _ := obj[name].(string)
	return s
}
