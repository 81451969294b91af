package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"
)

const deskAgent = `id: desk
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      tools: [lookup_order, %s]
edges:
  - [__start__, agent]
`

// The worker program knows its tools before it loads KORTYX_WORKFLOWS: a kortyx.reason node that
// names a tool the worker does not have stops it at start, with the file and the name, instead
// of failing every run.
func TestWorkerRefusesAWorkflowFileWithAnUnknownTool(t *testing.T) {
	start := func(t *testing.T, tool string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "desk.workflow.yaml"), []byte(strings.Replace(deskAgent, "%s", tool, 1)), 0o600))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, binary(t, "worker"))
		cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+taskQueue(t),
			"KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_WORKFLOWS="+dir, "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "KORTYX_MCP_SERVERS=")
		stderr := &strings.Builder{}
		cmd.Stderr = stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		return cmd, bufio.NewScanner(out), stderr
	}
	t.Run("unknown tool", func(t *testing.T) {
		cmd, out, stderr := start(t, "no_such_tool")
		for out.Scan() { // until the program exits
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "the worker must exit, not run: %v", err)
		require.Equal(t, 1, exit.ExitCode())
		require.Contains(t, stderr.String(), "desk.workflow.yaml: ")
		require.Contains(t, stderr.String(), `nodes.agent.params.tools[1]: tool "no_such_tool" is not one of the worker's tools (`)
	})
	t.Run("known tools", func(t *testing.T) {
		_, out, stderr := start(t, "refund")
		polling := false
		for !polling && out.Scan() {
			polling = strings.Contains(out.Text(), "polling task queue")
		}
		require.True(t, polling, "the worker starts with a file naming its tools; stderr: %s", stderr.String())
	})
}

// Seed scenarios whose recorded histories guard the workflow.GetVersion changes of the Reason
// loop: testdata/replay-seeds holds, for each, a history recorded before the change
// ("-before") and one recorded after; both must replay with the current code.
var seedAccounts = mustOutput("Account list.", "accounts", `{"type":"object","properties":{"accounts":{"type":"array"}},"required":["accounts"]}`)
var seedCard = mustOutput("A card.", "card", `{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)

var seedLetter = func() *contracts.OutputContract {
	c, err := contracts.NewOutputContract("A letter.", "letter", "1",
		contracts.MustCompileSchema(`{"type":"object","properties":{"subject":{"type":"string"},"body":{"type":"string"}},"required":["subject","body"]}`),
		map[string]contracts.StructuredKind{"subject": contracts.StructuredSet, "body": contracts.StructuredTextDelta})
	if err != nil {
		panic(err)
	}
	return c
}()

func mustOutput(desc, id, schema string) *contracts.OutputContract {
	c, err := contracts.NewOutputContract(desc, id, "1", contracts.MustCompileSchema(schema), nil)
	if err != nil {
		panic(err)
	}
	return c
}

type seedScenario struct {
	name  string
	opts  hooks.ReasonOptions
	retry int // node attempts (0: 1)
	turns []fake.Turn
	check func(t *testing.T, res contracts.RunResult, err error, counted int, chunks []string)
}

func seedScenarios() []seedScenario {
	invalid := func(n int) providers.ToolCall {
		return providers.ToolCall{Name: "kortyx_emit__accounts", Arguments: json.RawMessage(fmt.Sprintf(`{"accounts":%d}`, n))}
	}
	return []seedScenario{
		{name: "seeds-shared-corrections",
			opts:  hooks.ReasonOptions{Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"accounts": seedAccounts}}, ToolExecution: hooks.ToolExecution{MaxSteps: 5}},
			turns: []fake.Turn{fake.Calls(invalid(3), invalid(4)), fake.Text(`{"accounts":["a"]}`), fake.Text(`{"accounts":["b"]}`), fake.Text("Listed.")},
			check: func(t *testing.T, _ contracts.RunResult, err error, _ int, _ []string) {
				require.Equal(t, contracts.CodeReasonOutputSchemaCorrectionExhausted, contracts.CodeOf(err), "err: %v", err)
			}},
		{name: "seeds-last-pass",
			opts: hooks.ReasonOptions{Tools: []string{"seed_count"}, ToolExecution: hooks.ToolExecution{MaxSteps: 1},
				Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"card": seedCard}}},
			turns: []fake.Turn{fake.Calls(providers.ToolCall{Name: "kortyx_emit__card", Arguments: json.RawMessage(`{"title":"one"}`)},
				providers.ToolCall{Name: "seed_count", Arguments: json.RawMessage(`{}`)})},
			check: func(t *testing.T, _ contracts.RunResult, err error, counted int, _ []string) {
				require.Equal(t, contracts.CodeReasonMaxSteps, contracts.CodeOf(err), "err: %v", err)
				require.Equal(t, 0, counted, "the tool of the last pass does not run")
			}},
		{name: "seeds-invalidate-published",
			opts: hooks.ReasonOptions{Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"letter": seedLetter}}, ToolExecution: hooks.ToolExecution{MaxSteps: 4}},
			turns: []fake.Turn{fake.Calls(providers.ToolCall{Name: "kortyx_stream_emit__letter", Arguments: json.RawMessage(`{"instruction":"write"}`)}),
				fake.Text("Sorry, no letter."), fake.Text(`{"subject":"Hi","body":"Hello"}`), fake.Text("Sent.")},
			check: func(t *testing.T, res contracts.RunResult, err error, _ int, chunks []string) {
				require.NoError(t, err)
				require.Equal(t, "Sent.", res.State.Data["answer"])
				require.NotContains(t, chunks, string(contracts.ChunkStructuredInvalidated), "the failed pass published no field")
				require.Contains(t, chunks, string(contracts.ChunkStructuredData))
			}},
		{name: "seeds-reused-outcome", retry: 2,
			opts:  hooks.ReasonOptions{ID: "r", Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"accounts": seedAccounts}}, ToolExecution: hooks.ToolExecution{MaxSteps: 5}},
			turns: []fake.Turn{fake.Calls(invalid(3)), fake.Text(`{"accounts":["a"]}`), fake.Fail(contracts.CodeProviderHTTPError, false, "bad request"), fake.Text("Listed.")},
			check: func(t *testing.T, res contracts.RunResult, err error, _ int, _ []string) {
				require.NoError(t, err)
				require.Equal(t, "Listed.", res.State.Data["answer"])
			}},
	}
}

// seedRegistry registers one workflow per scenario (id = scenario name).
func seedRegistry(t *testing.T) *workflows.Registry {
	reg := workflows.NewRegistry()
	for _, sc := range seedScenarios() {
		opts := sc.opts
		run := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			call := opts
			call.Input = in.Text()
			res, err := hooks.Reason(ctx, call)
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
		}
		node := workflows.Node{Run: run}
		if sc.retry > 0 {
			node.Retry = &workflows.Retry{MaxAttempts: sc.retry}
		}
		require.NoError(t, reg.Add(&workflows.Definition{ID: sc.name, Version: "1", Nodes: map[string]workflows.Node{"agent": node},
			Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	}
	return reg
}

// The seed scenarios on the dev server; KORTYX_RECORD_HISTORIES=1 records their histories.
func TestSeedScenarios(t *testing.T) {
	reg := seedRegistry(t)
	for _, sc := range seedScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			var counted atomic.Int32
			count, err := tools.Func("seed_count", "Counts.", `{"type":"object"}`, func(context.Context, tools.Call, map[string]any) (string, error) {
				counted.Add(1)
				return "counted", nil
			})
			require.NoError(t, err)
			set, err := tools.NewSet(count)
			require.NoError(t, err)
			tq := taskQueue(t)
			broker := stream.NewMemory(stream.MemoryOptions{})
			w := newWorker(tc, tq, reg, &activities.Activities{Stream: broker,
				Providers: providers.NewSet(fake.New(sc.turns...)), DefaultProvider: fake.ID, Tools: set})
			require.NoError(t, w.Start())
			t.Cleanup(w.Stop)
			run := startRun(t, tc, tq, sc.name, "go")
			res, err := result(t, run)
			if os.Getenv("KORTYX_RECORD_HISTORIES") == "1" {
				raw, merr := protojson.Marshal(history(t, tc, run.GetID()))
				require.NoError(t, merr)
				b, merr := json.MarshalIndent(recorded{WorkflowID: run.GetID(), History: raw}, "", " ")
				require.NoError(t, merr)
				require.NoError(t, os.MkdirAll(filepath.Join("testdata", "replay-seeds"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join("testdata", "replay-seeds", sc.name+".json"), b, 0o644))
			}
			entries, rerr := broker.Read(context.Background(), run.GetID(), 0, 0)
			require.NoError(t, rerr)
			var chunks []string
			for _, e := range entries {
				chunks = append(chunks, string(e.Chunk.Type))
			}
			sc.check(t, res, err, int(counted.Load()), chunks)
		})
	}
}

// Histories recorded before and after the Reason loop changes replay with the current code.
func TestReplaySeedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "replay-seeds", "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 2*len(seedScenarios()), "a history before and after the change for each scenario")
	reg := seedRegistry(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			rec, h := readRecorded(t, f)
			require.NoError(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{WorkflowID: rec.WorkflowID, Logger: quietLogger()}))
		})
	}
}
