package workflows

import (
	"encoding/json"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// NodeFunc is a node: Go code that runs as Temporal workflow code. It must be deterministic
// (use workflow.Now, workflow.Go, workflow.SideEffect; no maps iterated for output, no I/O):
// model calls, tools and other side effects go through hooks or activities. ctx carries the
// node's hook scope; pass it to every hook.
type NodeFunc func(ctx workflow.Context, in NodeInput) (NodeResult, error)

// NodeInput is what a node receives (spec F1.3): the run input merged with the data returned by
// earlier nodes, and the node's static params.
type NodeInput struct {
	// Input is the current graph input: the run input (a string stays a string until a node
	// returns data, then it is kept under "rawInput") deep-merged with returned data.
	Input any
	// Params are the node's static params from its definition (never nil).
	Params map[string]any
}

// Decode converts Input into v (a struct, map or string) through JSON.
func (in NodeInput) Decode(v any) error { return convert(in.Input, v) }

// DecodeParams converts Params into v through JSON.
func (in NodeInput) DecodeParams(v any) error { return convert(in.Params, v) }

// Text returns Input if it is a string, else its "rawInput" string, else "".
func (in NodeInput) Text() string {
	switch v := in.Input.(type) {
	case string:
		return v
	case map[string]any:
		if s, ok := v["rawInput"].(string); ok {
			return s
		}
	}
	return ""
}

func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// NodeResult is what a node returns (spec F1.3); every field is optional.
type NodeResult struct {
	// Data is deep-merged into the graph input and the accumulated run data (arrays replace).
	Data map[string]any `json:"data,omitempty"`
	// UI publishes a message and/or structured data and merges them into the run's UI state.
	UI *UI `json:"ui,omitempty"`
	// Condition selects the conditional edge whose When equals it.
	Condition string `json:"condition,omitempty"`
	// Intent is used for routing when Condition is empty.
	Intent string `json:"intent,omitempty"`
	// TransitionTo ends the current workflow and hands the run over to the named workflow in the
	// same run and stream (spec F2.4).
	TransitionTo string `json:"transitionTo,omitempty"`
}

// UI is the UI part of a [NodeResult].
type UI struct {
	Message    string         `json:"message,omitempty"`
	Structured map[string]any `json:"structured,omitempty"`
}

// Start and End are the graph's entry and exit ([Start], [End]):
// the edge from Start names the first node, an edge to End ends the run.
const (
	Start = protocol.StartNode
	End   = protocol.EndNode
)

// Edge connects two nodes; When makes it conditional (taken when the node that just ran returned
// that condition or intent). From may be [Start], To may be [End].
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	When string `json:"when,omitempty"`
}

// Node is one node of a [Definition].
type Node struct {
	// Run is the node function. Either Run or RunName is set.
	Run NodeFunc `json:"-"`
	// RunName names a node function registered on the [Registry] (the "run" key of YAML/JSON files).
	RunName string `json:"run,omitempty"`
	// Params are passed to every call of the node.
	Params map[string]any `json:"params,omitempty"`
	// Metadata is free-form and ignored by the runtime.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Children optionally declares the workflows the node starts as child workflows (their
	// ids), so that the studio draws the node's fan-out on the graph. Ignored by the runtime and
	// not part of the fingerprint: it describes, it does not constrain.
	Children []string `json:"children,omitempty"`
	// Retry re-runs a node whose function returned an error; nil means one attempt.
	Retry *Retry `json:"retry,omitempty"`
	// Version is the declared version of the node's code (free-form, optional). It is part of
	// the graph fingerprint a run records when it starts: change it when the node's Go code
	// changes in a way runs in flight must not replay (they then stop with an error naming the
	// node until the old code is deployed again; see docs/versioning.md).
	Version string `json:"version,omitempty"`
}

// Retry is a node's retry behaviour (spec F1.4). Completed hook results of a failed attempt are
// reused by the next attempt.
type Retry struct {
	// MaxAttempts is the total number of attempts, at least 1.
	MaxAttempts int `json:"maxAttempts"`
	// DelayMs is the pause between attempts, in milliseconds (durable timer).
	DelayMs int `json:"delayMs,omitempty"`
}

// Definition is a workflow: a graph of nodes (spec F1.1). Validate it with [Definition.Validate]
// or load it from YAML/JSON with [Load]; register it with [Registry.Add].
type Definition struct {
	ID          string            `json:"id"`
	Version     string            `json:"version"`
	Description string            `json:"description,omitempty"`
	InputSchema *contracts.Schema `json:"inputSchema,omitempty"`
	// OutputSchema, when set, validates the run's final data.
	OutputSchema *contracts.Schema `json:"outputSchema,omitempty"`
	Nodes        map[string]Node   `json:"nodes"`
	Edges        []Edge            `json:"edges"`
	Metadata     map[string]any    `json:"metadata,omitempty"`
	// FastPath runs the model passes of every Reason call of the agent (its kortyx.reason
	// nodes and the hooks.Reason calls of its Go nodes) as Temporal local activities, as
	// hooks.ReasonOptions.FastPath does for one call (YAML: fastPath: true). Runs record it
	// with their definition. The session starts the runs of such an agent with a workflow task
	// timeout of [FastPathTaskTimeout], which bounds how late a cancellation reaches a running
	// pass; see docs/reason.md#fast-path.
	FastPath bool `json:"fastPath,omitempty"`
	// Budget is the agent's shared budget (docs/budgets.md): the model passes of all its runs
	// (as the root of a run, with their children) together, kept by a ledger workflow. It
	// overrides the worker's agent budget ([Registry.SetAgentBudget]) for this agent. YAML:
	// budget: {maxTokens: 1000000, period: month}.
	Budget *contracts.ScopeBudget `json:"budget,omitempty"`

	// pin is what a run records of this definition (set by Registry.Add; see pin.go).
	pin *protocol.PinnedDefinition
}

// FastPathTaskTimeout is the workflow task timeout the session starts the runs of a
// [Definition.FastPath] agent with. The SDK heartbeats a workflow task whose local activities
// run longer than 80% of its timeout, and a run learns of a cancellation only then, so a
// cancellation reaches a running pass of such a run within about 0.8 s. Start a fast-path run
// yourself with it (client.StartWorkflowOptions.WorkflowTaskTimeout,
// kortyx.StartOptions.WorkflowTaskTimeout) for the same bound; the server's default (10 s)
// gives 8 s.
const FastPathTaskTimeout = time.Second
