package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Every definition registered on a worker is also a Temporal workflow type of its own id, so
// that a plain Temporal client can start an agent by name:
//
//	c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "x", TaskQueue: "kortyx"}, "support", input)
//
// The execution is a run like one of type [contracts.RunWorkflowName] (same state query,
// answer update and signal, stream keyed by the workflow ID); it only names the agent by its
// type. input is a [contracts.RunInput] (its Workflow empty or equal to the type) or a JSON
// string, taken as RunInput{Input: that string}.

// maxAgentTypeLength bounds an agent id used as a workflow type (Temporal's default limit on
// workflow type names is 1000 bytes).
const maxAgentTypeLength = 1000

// agentTypeProblem says why id cannot be a workflow type of its own ("" when it can): it must
// be valid UTF-8 without control characters, at most maxAgentTypeLength bytes, and must not
// take a name of Kortyx's own workflow types ("kortyx." and anything under it).
func agentTypeProblem(id string) string {
	switch {
	case !utf8.ValidString(id):
		return "the workflow id is also its Temporal workflow type: it must be valid UTF-8"
	case len(id) > maxAgentTypeLength:
		return fmt.Sprintf("the workflow id is also its Temporal workflow type: it must have at most %d bytes", maxAgentTypeLength)
	case strings.HasPrefix(strings.ToLower(id), "kortyx."):
		return fmt.Sprintf("the workflow id is also its Temporal workflow type, and %q is in the namespace of Kortyx's own types (%s, %s): choose an id that does not start with \"kortyx.\"",
			id, contracts.RunWorkflowName, protocol.SessionWorkflowName)
	}
	for _, c := range id {
		if c < ' ' || c == 0x7f {
			return "the workflow id is also its Temporal workflow type: it must not contain control characters"
		}
	}
	return ""
}

// registerAgents registers each definition of the registry as a workflow type of its id.
func (r *Runner) registerAgents(w worker.WorkflowRegistry) {
	for _, d := range r.reg.Workflows() {
		if agentTypeProblem(d.ID) != "" { // refused by Registry.Add: cannot happen
			continue
		}
		w.RegisterWorkflowWithOptions(r.agent(d.ID), workflow.RegisterOptions{Name: d.ID})
	}
}

// agent returns the workflow function of the agent id: it decodes the input (see above) and
// runs it as [Runner.Run] does. An input it cannot take fails the run with INVALID_INPUT (an
// error chunk and done on the stream, as for any failure).
func (r *Runner) agent(id string) func(workflow.Context, json.RawMessage) (contracts.RunResult, error) {
	return func(ctx workflow.Context, raw json.RawMessage) (contracts.RunResult, error) {
		in, err := agentInput(id, raw)
		if err != nil {
			run := execution.NewRun(ctx, "", protocol.RunSnapshot{})
			if ierr := run.Install(ctx); ierr != nil {
				return contracts.RunResult{}, ierr
			}
			run.Snap.State.CurrentWorkflow = id
			run.InitSearchAttributes(ctx)
			return r.fail(ctx, run, err)
		}
		return r.meteredRun(ctx, in)
	}
}

// agentInput decodes the input of an execution of the agent type id.
func agentInput(id string, raw json.RawMessage) (protocol.RunStart, error) {
	var in protocol.RunStart
	b := bytes.TrimSpace(raw)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		in.Workflow = id
		return in, nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return in, contracts.Errorf(contracts.CodeInvalidInput, "the input of workflow type %q is not valid JSON: %v", id, err)
		}
		in.Workflow, in.Input = id, json.RawMessage(b)
		return in, nil
	case b[0] != '{':
		return in, contracts.Errorf(contracts.CodeInvalidInput,
			"the input of workflow type %q must be a contracts.RunInput object or a JSON string (the user message)", id)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, contracts.Errorf(contracts.CodeInvalidInput,
			"the input of workflow type %q must be a contracts.RunInput (an object with workflow, input, sessionId, context, messages…): %v", id, err)
	}
	switch strings.TrimSpace(in.Workflow) {
	case "":
		in.Workflow = id
	case id:
	default:
		return in, contracts.Errorf(contracts.CodeInvalidInput,
			"an execution of workflow type %q runs that workflow, but its input names workflow %q: leave RunInput.Workflow empty, or start type %q (or %s)",
			id, in.Workflow, in.Workflow, contracts.RunWorkflowName)
	}
	return in, nil
}
