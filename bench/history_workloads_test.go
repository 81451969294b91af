package bench

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/rand/v2"

	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/workflow"
)

// The history workload: one hooks.Reason node whose model asks for the blob tool a given number
// of times (one call per pass), each call returning a given number of bytes, then answers.
const (
	kortyxHistory   = "bench-history"
	historyProvider = "bench-history" // historyModel
	historyTool     = "bench_blob"
	historyHookID   = "history"
	historyAnswer   = "Done with the blobs."
)

var (
	historyModel    = fake.NewResponder(historyTurn).WithID(historyProvider)
	historyToolRuns = &runCounter{n: map[string]int{}}
)

// historyInput is the run input of the history workflow (and what its prompt encodes).
type historyInput struct {
	Steps int `json:"steps"` // tool calls (model passes: Steps+1)
	Bytes int `json:"bytes"` // bytes of each tool result's content
}

func (in historyInput) prompt() string {
	return fmt.Sprintf("Call %s %d times with %d bytes, then answer.", historyTool, in.Steps, in.Bytes)
}

// historyTurn is the history model: stateless, it reads the loop from the prompt (the first
// message) and asks for the blob tool until the request holds that many tool results.
func historyTurn(req providers.Request) fake.Turn {
	var in historyInput
	if len(req.Messages) > 0 {
		if _, err := fmt.Sscanf(req.Messages[0].Content, "Call "+historyTool+" %d times with %d bytes, then answer.", &in.Steps, &in.Bytes); err != nil {
			return fake.Text("bad prompt: " + err.Error())
		}
	}
	results := 0
	for _, m := range req.Messages {
		if m.Role == providers.RoleTool {
			results++
		}
	}
	if results >= in.Steps {
		return fake.Text(historyAnswer)
	}
	return fake.Call(historyTool, fmt.Sprintf(`{"i":%d,"bytes":%d}`, results+1, in.Bytes))
}

// blobTool returns the blob tool: call i of a run returns a string of the asked number of
// characters, unique to (run, i) and hard to compress (base64 of a seeded ChaCha8 stream), so
// that neither the claim check's content addressing nor gzip can make repeated content look
// small.
func blobTool() (tools.Tool, error) {
	return tools.Func(historyTool, "Return a blob.",
		`{"type":"object","properties":{"i":{"type":"integer"},"bytes":{"type":"integer"}},"required":["i","bytes"]}`,
		func(_ context.Context, call tools.Call, in struct {
			I     int `json:"i"`
			Bytes int `json:"bytes"`
		}) (string, error) {
			historyToolRuns.add(call.RunID)
			return blob(call.RunID, in.I, in.Bytes), nil
		})
}

// blob is n base64 characters drawn from a ChaCha8 stream seeded by (runID, i).
func blob(runID string, i, n int) string {
	seed := sha256.Sum256([]byte(fmt.Sprintf("%s:%d", runID, i)))
	raw := make([]byte, n*3/4+3)
	_, _ = rand.NewChaCha8(seed).Read(raw)
	return base64.StdEncoding.EncodeToString(raw)[:n]
}

// historyDefinition is the Kortyx workflow of the history workload: one node running the loop
// its run input describes.
func historyDefinition() *workflows.Definition {
	run := func(ctx workflow.Context, ni workflows.NodeInput) (workflows.NodeResult, error) {
		var in historyInput
		if err := ni.Decode(&in); err != nil {
			return workflows.NodeResult{}, err
		}
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{
			ID:     historyHookID,
			Model:  providers.ModelRef{Provider: historyProvider},
			Input:  in.prompt(),
			Tools:  []string{historyTool},
			Silent: true,
			// Unbounded: the model reads every result whole (the default, 32,000 characters,
			// would cut the 100 KB results and hide the growth this workload measures).
			ToolExecution: hooks.ToolExecution{MaxSteps: in.Steps + 1, MaxResultChars: -1},
		})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
	}
	return &workflows.Definition{
		ID: kortyxHistory, Version: "1",
		Nodes: map[string]workflows.Node{reasonNode: {Run: run}},
		Edges: []workflows.Edge{{From: workflows.Start, To: reasonNode}, {From: reasonNode, To: workflows.End}},
	}
}
