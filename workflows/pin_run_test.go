package workflows_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// The files of TestContinueAsNewKeepsThePinnedDefinition: v2 adds a node in front and changes
// the label of step.
const (
	pinLoopV1 = "id: loop\nversion: '1'\nnodes: {step: {run: count, params: {label: v1}}}\nedges: [[__start__, step], [step, step, {when: more}]]\n"
	pinLoopV2 = "id: loop\nversion: '2'\nnodes: {first: {run: count, params: {label: first}}, step: {run: count, params: {label: v2}}}\nedges: [[__start__, first], [first, step], [step, step, {when: more}]]\n"
)

// count appends its label to the run's data and loops until it ran 4 times.
func count(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	var st struct {
		Labels []string `json:"labels"`
	}
	if err := in.Decode(&st); err != nil {
		return workflows.NodeResult{}, err
	}
	labels := append(st.Labels, in.Params["label"].(string))
	res := workflows.NodeResult{Data: map[string]any{"labels": labels}}
	if len(labels) < 4 {
		res.Condition = "more"
	}
	return res, nil
}

func pinLoopRegistry(t *testing.T, file string) *workflows.Registry {
	t.Helper()
	reg := workflows.NewRegistry()
	require.NoError(t, reg.RegisterNode("count", count))
	d, err := workflows.Load([]byte(file))
	require.NoError(t, err)
	require.NoError(t, reg.Add(d))
	return reg
}

// A run continues as new with the definition it started with, also on a worker whose file
// changed in between; a new run takes the new file.
func TestContinueAsNewKeepsThePinnedDefinition(t *testing.T) {
	v1 := pinLoopRegistry(t, pinLoopV1)
	in := protocol.RunStart{RunInput: contracts.RunInput{Workflow: "loop", Input: json.RawMessage(`{}`), ContinueAsNewAfterNodes: 2}}
	broker := stream.NewMemory(stream.MemoryOptions{})
	execute := func(reg *workflows.Registry, in protocol.RunStart) (*protocol.RunStart, contracts.RunResult) {
		env := newEnv()
		workflows.NewRunner(reg).Register(env)
		(&activities.Activities{Stream: broker}).Register(env)
		env.ExecuteWorkflow(contracts.RunWorkflowName, in)
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			var next protocol.RunStart
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
			return &next, contracts.RunResult{}
		}
		require.NoError(t, err)
		var res contracts.RunResult
		require.NoError(t, env.GetWorkflowResult(&res))
		return nil, res
	}
	next, _ := execute(v1, in)
	require.NotNil(t, next)
	require.NotNil(t, next.Snapshot.Pinned, "the snapshot carries the definition")
	require.Equal(t, v1.Fingerprint("loop"), next.Snapshot.Pinned.Hash)

	v2 := pinLoopRegistry(t, pinLoopV2)
	require.NotEqual(t, v1.Fingerprint("loop"), v2.Fingerprint("loop"))
	for {
		n, res := execute(v2, *next)
		if n == nil {
			require.Equal(t, []any{"v1", "v1", "v1", "v1"}, res.State.Data["labels"], "the recorded graph and params to the end")
			break
		}
		require.Equal(t, v1.Fingerprint("loop"), n.Snapshot.Pinned.Hash)
		next = n
	}

	_, res := execute(v2, protocol.RunStart{RunInput: contracts.RunInput{Workflow: "loop", Input: json.RawMessage(`{}`)}})
	require.Equal(t, []any{"first", "v2", "v2", "v2"}, res.State.Data["labels"], "a new run uses the new file")
}
