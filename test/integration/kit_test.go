package integration_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// The recording command of docs/running.md ("Testing your agents"), run for real: the history
// `temporal workflow show --workflow-id <id> -o json` prints replays with kortyxtest.ReplayFile
// against the agent's code, and so does the one client.GetWorkflowHistory returns
// (kortyxtest.FetchHistory). With KORTYX_RECORD_HISTORIES=1 the CLI's output is kept as
// kortyxtest/testdata/hello.json, the history of the package's Example.
func TestKitReplaysWhatTheCLIShows(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, "hello", "")
	chunks, _ := nextResponse(t, e.follow, run.GetID(), 0)
	ask, _ := interruptOf(t, chunks)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, tc.SignalWorkflow(ctx, run.GetID(), "", contracts.RespondName, answer(ask, "Ada")))
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada!", res.State.UI.Message)

	out, err := exec.CommandContext(ctx, tcliPath, "workflow", "show", "--workflow-id", run.GetID(), "-o", "json",
		"--address", srv.Address()).Output()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "h.json")
	require.NoError(t, os.WriteFile(path, out, 0o644))

	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	require.NoError(t, kortyxtest.ReplayFile(reg, path, kortyxtest.ReplayOptions{}))
	h, err := kortyxtest.FetchHistory(ctx, tc, run.GetID(), "")
	require.NoError(t, err)
	require.NoError(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{}))

	// The same history against a hello that greets without asking: reported, not replayed.
	// Same graph (Temporal sees the commands differ), then a new definition version (the
	// recorded definition differs, and its Go node cannot be rebuilt).
	for version, want := range map[string]string{"1": "[TMPRL1100] nondeterministic workflow",
		"2": `[kortyx] nondeterministic change: workflow "hello" changed since this run started`} {
		changed := workflows.NewRegistry()
		require.NoError(t, changed.Add(&workflows.Definition{ID: "hello", Version: version,
			Nodes: map[string]workflows.Node{"greet": {Run: func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
				return workflows.NodeResult{UI: &workflows.UI{Message: "Hello!"}}, nil
			}}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "greet"}}}))
		err = kortyxtest.ReplayFile(changed, path, kortyxtest.ReplayOptions{})
		require.ErrorContains(t, err, want, "version %s", version)
	}

	if os.Getenv("KORTYX_RECORD_HISTORIES") == "1" {
		require.NoError(t, os.WriteFile(filepath.Join(root, "kortyxtest", "testdata", "hello.json"), out, 0o644))
	}
}

// The unit test snippet of docs/running.md is examples/hello's test.
func TestKitSnippetIsTheHelloTest(t *testing.T) {
	docs, err := os.ReadFile(filepath.Join(root, "docs", "running.md"))
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(root, "examples", "hello", "hello_test.go"))
	require.NoError(t, err)
	i := strings.Index(string(src), "func TestHello(")
	require.GreaterOrEqual(t, i, 0)
	fn := string(src)[i:]
	require.Contains(t, string(docs), "```go\n"+fn+"```\n")
}
