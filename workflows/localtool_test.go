package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// modes are the two ways a worker tool runs: a regular activity, or a local one (tools.Local,
// Registry.SetLocalTools).
var modes = []struct {
	name  string
	local bool
}{{"regular", false}, {"local", true}}

// toolStarts counts the starts of the kortyx.Tool activity, regular and local.
type toolStarts struct {
	mu             sync.Mutex
	regular, local int
}

func (s *toolStarts) add(local bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if local {
		s.local++
	} else {
		s.regular++
	}
}

// modeHarness is a harness whose registry runs the tools of set as local activities when
// local is true (as app.Run wires tools marked tools.Local).
func modeHarness(t *testing.T, local bool, model *fake.Model, set *tools.Set, nodes map[string]workflows.NodeFunc, edges ...string) (*harness, *toolStarts) {
	t.Helper()
	h := &harness{t: t, env: newEnv(), broker: stream.NewMemory(stream.MemoryOptions{})}
	reg := workflows.NewRegistry()
	reg.SetToolNames(set.Names()...)
	if local {
		reg.SetLocalTools(set.Names()...)
	}
	require.NoError(t, reg.Add(def("agent", nodes, edges...)))
	workflows.NewRunner(reg).Register(h.env)
	h.acts = &activities.Activities{Stream: h.broker, Providers: providers.NewSet(model), DefaultProvider: fake.ID, Tools: set}
	h.acts.Register(h.env)
	starts := &toolStarts{}
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == protocol.ToolActivityName {
			starts.add(false)
		}
	})
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == protocol.ToolActivityName {
			starts.add(true)
		}
	})
	return h, starts
}

// requireMode checks that every start of kortyx.Tool ran the way the mode says.
func requireMode(t *testing.T, local bool, starts *toolStarts, n int) {
	t.Helper()
	if local {
		require.Equal(t, [2]int{0, n}, [2]int{starts.regular, starts.local}, "regular, local starts of kortyx.Tool")
	} else {
		require.Equal(t, [2]int{n, 0}, [2]int{starts.regular, starts.local}, "regular, local starts of kortyx.Tool")
	}
}

// chunkJSON is the run's stream as JSON, its operation id (random per run) replaced by "op".
func chunkJSON(t *testing.T, h *harness) string {
	t.Helper()
	cs := h.chunks()
	for i := range cs {
		if cs[i].OpID != "" {
			cs[i].OpID = "op"
		}
	}
	b, err := json.Marshal(cs)
	require.NoError(t, err)
	return string(b)
}

func TestLocalToolMarksTheTool(t *testing.T) {
	box := &toolbox{}
	plain := box.set(t)
	lookup, _ := plain.Get("lookup_order")
	refund, _ := plain.Get("refund")
	require.False(t, lookup.Local)
	set, err := tools.NewSet(tools.Local(lookup), refund)
	require.NoError(t, err)
	got, _ := set.Get("lookup_order")
	require.True(t, got.Local)
	require.Equal(t, []string{"lookup_order"}, set.LocalNames())
	require.Empty(t, plain.LocalNames())

	reg := workflows.NewRegistry()
	require.Empty(t, reg.LocalTools())
	reg.SetLocalTools("b", "a", "b")
	require.Equal(t, []string{"a", "b"}, reg.LocalTools())
}

// TestLocalToolLoop: the same tool loop with the tool regular and local gives the same chunks,
// results, model passes, tool executions and idempotency key; only the way kortyx.Tool runs
// differs.
func TestLocalToolLoop(t *testing.T) {
	var seen []string
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			box := &toolbox{}
			model := fake.New(fake.Call("lookup_order", `{"orderId":"A-1"}`), fake.Call("lookup_order", `{"orderId":"B-2"}`), fake.Text("Both shipped."))
			var res hooks.ReasonResult
			h, starts := modeHarness(t, m.local, model, box.set(t), map[string]workflows.NodeFunc{
				"chat": reasonNode(hooks.ReasonOptions{ID: "r", Tools: []string{"lookup_order"}, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}, MaxSteps: 3}}, &res),
			}, "__start__>chat")
			h.run("agent", "Where are A-1 and B-2?")
			_, err := h.result()
			require.NoError(t, err)
			require.Equal(t, []string{"tool-call-start", "tool-call-result", "tool-call-start", "tool-call-result",
				"text-start", "text-delta", "text-delta", "text-end", "done"}, h.types())
			require.JSONEq(t, `{"orderId":"B-2","status":"shipped"}`, h.chunks()[3].Content)
			require.Equal(t, 3, model.Calls())
			require.Equal(t, 2, box.n("lookup_order"))
			requireMode(t, m.local, starts, 2)
			require.Equal(t, []string{testRunID + ":" + res.OpID + ":call-lookup_order-1", testRunID + ":" + res.OpID + ":call-lookup_order-2"}, box.keys)
			require.Equal(t, "Both shipped.", res.Text)
			require.Len(t, res.ToolResults, 2)
			seen = append(seen, chunkJSON(t, h))
		})
	}
	require.Len(t, seen, 2)
	require.JSONEq(t, seen[0], seen[1], "the same stream with the tool regular and local")
}

// TestLocalToolErrorsAreTheRegularOnes: error results (a plain error, a *contracts.Error,
// invalid arguments) reach the model and the clients exactly as from a regular tool.
func TestLocalToolErrorsAreTheRegularOnes(t *testing.T) {
	var seen []string
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			box := &toolbox{}
			base := box.set(t)
			broken, _ := base.Get("broken")
			lookup, _ := base.Get("lookup_order")
			locked, err := tools.Func("locked", "A locked drawer.", `{"type":"object"}`,
				func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
					return "", contracts.DomainError("LOCKED", "The drawer is locked.", nil)
				})
			require.NoError(t, err)
			set, err := tools.NewSet(broken, lookup, locked)
			require.NoError(t, err)
			model := fake.New(fake.Calls(
				providers.ToolCall{Name: "broken", Arguments: json.RawMessage(`{}`)},
				providers.ToolCall{Name: "lookup_order", Arguments: json.RawMessage(`{"order":7}`)},
				providers.ToolCall{Name: "locked", Arguments: json.RawMessage(`{}`)},
			), fake.Text("Sorry."))
			h, starts := modeHarness(t, m.local, model, set, map[string]workflows.NodeFunc{
				"chat": reasonNode(hooks.ReasonOptions{ID: "r", Tools: []string{"broken", "lookup_order", "locked"}, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}}}, nil),
			}, "__start__>chat")
			h.run("agent", "x")
			_, err = h.result()
			require.NoError(t, err)
			require.Equal(t, []string{"tool-call-start", "tool-call-error", "tool-call-start", "tool-call-error", "tool-call-start", "tool-call-error",
				"text-start", "text-delta", "text-end", "done"}, h.types())
			c := h.chunks()
			require.Equal(t, contracts.CodeExecutionFailed, c[1].Failure.Code)
			require.Equal(t, "An unexpected error occurred.", c[1].Message)
			require.Equal(t, contracts.CodeSchemaValidation, c[3].Failure.Code)
			require.Equal(t, contracts.CodeDomainError, c[5].Failure.Code)
			require.Equal(t, "The drawer is locked.", c[5].Message)
			msgs := model.Requests()[1].Messages // user, assistant, tool ×3
			require.Equal(t, "warehouse offline", msgs[2].Content)
			require.True(t, msgs[2].IsError && msgs[3].IsError && msgs[4].IsError)
			require.Equal(t, 1, box.n("broken"))
			require.Equal(t, 0, box.n("lookup_order"), "invalid arguments never reach the tool")
			requireMode(t, m.local, starts, 3) // the activity runs and refuses the arguments
			seen = append(seen, chunkJSON(t, h))
		})
	}
	require.JSONEq(t, seen[0], seen[1])
}

// TestLocalToolRetries: a Retryable error and a panic are retried with the same idempotency
// key until the tool succeeds; retries that run out fail the run with the same code and
// chunks as a regular tool's.
func TestLocalToolRetries(t *testing.T) {
	type outcome struct {
		Types []string
		Code  contracts.Code
		Error string
	}
	tests := []struct {
		name  string
		fail  func(attempt int) error // the error of an attempt (nil: succeed); may panic
		retry *temporal.RetryPolicy
		runs  int
		want  outcome
	}{
		{name: "retryable then success", runs: 3,
			fail: func(n int) error {
				if n < 3 {
					return tools.Retryable(errors.New("busy"))
				}
				return nil
			},
			// Two failures of the default cap of 3, each announced by a status chunk.
			want: outcome{Types: []string{"tool-call-start", "status", "status", "tool-call-result", "text-start", "text-delta", "text-end", "done"}}},
		{name: "panic then success", runs: 2,
			fail: func(n int) error {
				if n == 1 {
					panic("tool bug")
				}
				return nil
			},
			want: outcome{Types: []string{"tool-call-start", "tool-call-result", "text-start", "text-delta", "text-end", "done"}}},
		{name: "retryable exhausted", runs: 3, retry: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
			fail: func(int) error { return tools.Retryable(errors.New("busy")) },
			want: outcome{Types: []string{"tool-call-start", "error", "done"}, Code: contracts.CodeExecutionFailed, Error: "An unexpected error occurred."}},
		{name: "panic exhausted", runs: 2, retry: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2},
			fail: func(int) error { panic("tool bug") },
			want: outcome{Types: []string{"tool-call-start", "error", "done"}, Code: contracts.CodeExecutionFailed, Error: "An unexpected error occurred."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					var mu sync.Mutex
					var keys []string
					flaky, err := tools.Func("flaky", "Sometimes fails.", `{"type":"object"}`,
						func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
							mu.Lock()
							keys = append(keys, call.IdempotencyKey)
							n := len(keys)
							mu.Unlock()
							if err := tc.fail(n); err != nil {
								return "", err
							}
							return "ok", nil
						})
					require.NoError(t, err)
					set, err := tools.NewSet(flaky)
					require.NoError(t, err)
					model := fake.New(fake.Call("flaky", `{}`), fake.Text("Done."))
					var res hooks.ReasonResult
					h, starts := modeHarness(t, m.local, model, set, map[string]workflows.NodeFunc{
						"chat": reasonNode(hooks.ReasonOptions{ID: "r", Tools: []string{"flaky"}, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}, Retry: tc.retry}}, &res),
					}, "__start__>chat")
					h.run("agent", "x")
					_, werr := h.result()
					got := outcome{Types: h.types(), Code: "", Error: ""}
					if werr != nil {
						got.Code = contracts.CodeOf(werr)
						got.Error = h.chunks()[1].Message
						require.Equal(t, 1, model.Calls())
					} else {
						require.Equal(t, 2, model.Calls())
						require.Equal(t, `"ok"`, res.ToolResults[0].Content)
					}
					require.Equal(t, tc.want, got)
					require.Len(t, keys, tc.runs)
					for _, k := range keys {
						require.Equal(t, keys[0], k, "one idempotency key for every attempt")
					}
					require.Equal(t, testRunID+":", keys[0][:len(testRunID)+1])
					requireMode(t, m.local, starts, tc.runs)
					seen = append(seen, chunkJSON(t, h))
				})
			}
			require.JSONEq(t, seen[0], seen[1], "the same stream with the tool regular and local")
		})
	}
}

// TestLocalToolTimeout: an attempt that outlives ToolExecution.Timeout is retried, and retries
// that run out fail the run with ACTIVITY_TIMEOUT naming kortyx.Tool, as for a regular tool.
// (The test environment does not retry a regular activity after a StartToClose timeout, and
// reports it with retryState Timeout: the regular run has one attempt here, two on a server.)
func TestLocalToolTimeout(t *testing.T) {
	var seen []string
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var mu sync.Mutex
			runs := 0
			slow, err := tools.Func("slow", "Never answers in time.", `{"type":"object"}`,
				func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
					mu.Lock()
					runs++
					mu.Unlock()
					<-ctx.Done()
					return "", ctx.Err()
				})
			require.NoError(t, err)
			set, err := tools.NewSet(slow)
			require.NoError(t, err)
			model := fake.New(fake.Call("slow", `{}`), fake.Text("unreachable"))
			h, starts := modeHarness(t, m.local, model, set, map[string]workflows.NodeFunc{
				"chat": reasonNode(hooks.ReasonOptions{ID: "r", Tools: []string{"slow"}, ToolExecution: hooks.ToolExecution{
					Timeout: 300 * time.Millisecond, Retry: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2}}}, nil),
			}, "__start__>chat")
			h.run("agent", "x")
			_, werr := h.result()
			require.Equal(t, contracts.CodeActivityTimeout, contracts.CodeOf(werr))
			require.Equal(t, []string{"error", "done"}, h.types())
			f := h.chunks()[0].Failure
			require.Equal(t, "Activity kortyx.Tool did not complete in time (StartToClose timeout).", f.Message)
			require.Equal(t, protocol.ToolActivityName, f.Context["activity"])
			require.Equal(t, "StartToClose", f.Context["timeout"])
			attempts := 1
			if m.local {
				attempts = 2
				require.Equal(t, map[string]any{"activity": protocol.ToolActivityName, "timeout": "StartToClose"}, f.Context)
			}
			mu.Lock() // a timed-out attempt's goroutine is not waited for: it wrote runs under mu
			ran := runs
			mu.Unlock()
			require.Equal(t, attempts, ran)
			requireMode(t, m.local, starts, attempts)
			require.Equal(t, 1, model.Calls())
			f.Context = nil
			b, err := json.Marshal(f)
			require.NoError(t, err)
			seen = append(seen, string(b))
		})
	}
	require.Len(t, seen, 2)
	require.JSONEq(t, seen[0], seen[1], "the same failure (but its context) with the tool regular and local")
}

// TestLocalToolApproval: a local tool behind approval asks first; approved it runs once
// (locally), denied it never runs.
func TestLocalToolApproval(t *testing.T) {
	for _, decision := range []string{"approve", "deny"} {
		t.Run(decision, func(t *testing.T) {
			box := &toolbox{}
			model := fake.New(fake.Call("refund", `{"orderId":"A-1"}`), fake.Text("Done."))
			h, starts := modeHarness(t, true, model, box.set(t), map[string]workflows.NodeFunc{
				"chat": reasonNode(hooks.ReasonOptions{ID: "r", Tools: []string{"refund"},
					ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}, Approval: hooks.Only("refund")}}, nil),
			}, "__start__>chat")
			asked := 0
			var toolRunsWhenAsked int
			h.updateAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
				asked++
				toolRunsWhenAsked = box.n("refund")
				return contracts.Response{Token: p.Token, RequestID: p.RequestID, Selected: []string{decision}}
			}, func(_ contracts.RespondResult, err error) { require.NoError(t, err) })
			h.run("agent", "refund A-1")
			_, err := h.result()
			require.NoError(t, err)
			require.Equal(t, 1, asked)
			require.Equal(t, 0, toolRunsWhenAsked, "the tool waits for the approval")
			require.Equal(t, []string{"interrupt", "done", "tool-call-start", "tool-call-result", "text-start", "text-delta", "text-end", "done"}, h.types())
			require.Equal(t, 2, model.Calls())
			if decision == "deny" {
				require.Equal(t, 0, box.n("refund"))
				requireMode(t, true, starts, 0)
				require.True(t, h.chunks()[3].IsError)
				return
			}
			require.Equal(t, 1, box.n("refund"))
			requireMode(t, true, starts, 1)
		})
	}
}
