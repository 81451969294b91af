package web_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/workflow"
)

// The test agents of the browser tests.
const (
	formWorkflow   = "web-form"   // a custom question from a JSON Schema
	tickerWorkflow = "web-ticker" // streams words slowly, then says it is done
	echoWorkflow   = "web-echo"   // counts the session's turns
	failWorkflow   = "web-fail"   // fails its run
)

// echoDescription is the echo agent's description, which the page suggests with its id.
const echoDescription = "Counts the session's turns"

// tickerWords are streamed one text-delta each, tickerPause apart.
var tickerWords = strings.Fields("one two three four five six seven eight")

const tickerPause = 100 * time.Millisecond

const formSchema = `{"type":"object","required":["quantity","speed"],"additionalProperties":false,
 "properties":{"quantity":{"type":"integer","minimum":1,"title":"Quantity"},"speed":{"enum":["standard","express"],"title":"Speed"}}}`

func registerAgents(reg *workflows.Registry) error {
	one := func(id string, fn workflows.NodeFunc) *workflows.Definition {
		return &workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{"agent": {Run: fn}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}
	}
	form := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "shipping", Kind: contracts.InterruptCustom, Contract: "shipping",
			Request:        map[string]any{"question": "How should we ship it?", "schema": json.RawMessage(formSchema)},
			ResponseSchema: contracts.MustCompileSchema(formSchema)})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		var v struct {
			Quantity int    `json:"quantity"`
			Speed    string `json:"speed"`
		}
		if err := a.Decode(&v); err != nil {
			return workflows.NodeResult{}, err
		}
		extras, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "extras", Kind: contracts.InterruptMultiChoice, Question: "Which extras?",
			Options: []contracts.Option{{ID: "gift", Label: "Gift wrap"}, {ID: "insure", Label: "Insurance"}, {ID: "track", Label: "Tracking"}}})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: fmt.Sprintf("Shipping %d, %s, with %s.", v.Quantity, v.Speed, strings.Join(extras.Selected, " and "))}}, nil
	}
	ticker := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		for i, w := range tickerWords {
			if i > 0 {
				w = " " + w
			}
			if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{StreamID: "ticker", DataType: "ticker", Kind: contracts.StructuredTextDelta, Path: "text", Delta: w}); err != nil {
				return workflows.NodeResult{}, err
			}
			if err := hooks.Flush(ctx); err != nil {
				return workflows.NodeResult{}, err
			}
			if err := workflow.Sleep(ctx, tickerPause); err != nil {
				return workflows.NodeResult{}, err
			}
		}
		return workflows.NodeResult{Data: map[string]any{"text": strings.Join(tickerWords, " ")}, UI: &workflows.UI{Message: "Done ticking."}}, nil
	}
	echo := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		n, err := hooks.WorkflowState(ctx, "turns", 0)
		if err != nil {
			return workflows.NodeResult{}, err
		}
		if err := n.Set(n.Get() + 1); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: fmt.Sprintf("Turn %d: %s", n.Get(), in.Text())}}, nil
	}
	fail := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		return workflows.NodeResult{}, errors.New("the test agent fails")
	}
	echoDef := one(echoWorkflow, echo)
	echoDef.Description = echoDescription
	return reg.Add(one(formWorkflow, form), one(tickerWorkflow, ticker), echoDef, one(failWorkflow, fail))
}
