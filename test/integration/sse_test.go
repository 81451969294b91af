package integration_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// The silent tool's run: the case is a 30 s tool behind a 5 s WriteTimeout, scaled down
// here to keep the suite short; what matters is that the tool is silent for more than twice the
// server's WriteTimeout.
const (
	silentWorkflow     = "silenttool"
	silentFor          = 12 * time.Second
	silentWriteTimeout = 3 * time.Second
)

// startSilentWorker starts a worker whose workflow silenttool calls hooks.Reason with the tool
// wait_quietly, which returns after silentFor without publishing anything.
func startSilentWorker(t *testing.T) *inproc {
	t.Helper()
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t), effects: filepath.Join(t.TempDir(), "effects.txt")}
	reg, err := examples.Registry()
	require.NoError(t, err)
	node := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "agent", Model: providers.Model("fake:test"), Input: in.Text(),
			Tools: []string{"wait_quietly"}, Timeout: 3 * time.Second, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}}})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
	}
	require.NoError(t, reg.Add(&workflows.Definition{ID: silentWorkflow, Version: "1", Nodes: map[string]workflows.Node{"agent": {Run: node}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	quiet, err := tools.Func("wait_quietly", "Wait without a word.", `{"type":"object"}`,
		func(ctx context.Context, _ tools.Call, _ map[string]any) (map[string]any, error) {
			select {
			case <-time.After(silentFor):
				return map[string]any{"waited": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	require.NoError(t, err)
	set, err := tools.NewSet(quiet)
	require.NoError(t, err)
	model := fake.NewResponder(func(req providers.Request) fake.Turn {
		for _, m := range req.Messages {
			if m.Role == providers.RoleTool {
				return fake.Text("Waited.")
			}
		}
		return fake.Call("wait_quietly", `{}`)
	})
	w := newWorker(tc, e.tq, reg, &activities.Activities{Stream: e.broker,
		Providers: providers.NewSet(model), Tools: set})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return e
}

// Issue 10 item 5: the chat route writes through stream's SSE writer, which resets the write
// deadline before each write and sends keep-alive comments while the run is silent. A turn
// whose tool is silent for four times the server's WriteTimeout reaches the client whole: every
// chunk, then [DONE] (the route's own writer lost the stream at the first write after the
// server's deadline, and sent no keep-alive).
func TestChatSSEOutlivesServerWriteTimeout(t *testing.T) {
	e := startSilentWorker(t)
	h, err := chat.NewHandler(newService(t, e.c, e.broker, e.tq), chat.Options{AllowUnauthenticated: true,
		KeepAlive: time.Second})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/chat", h)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.WriteTimeout = silentWriteTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	c := &chatEnv{inproc: e, url: srv.URL}

	session := "s-" + taskQueue(t)
	r := c.send(t, prompt(session, "", silentWorkflow, "wait"))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NoError(t, r.ParseErr, "body: %s", r.Body)
	require.Equal(t, []string{"session", "tool-call-start", "tool-call-result", "text-start", "text-delta", "text-end",
		"checkpoint", "done"}, types(r.Chunks(t)))
	require.Equal(t, "[DONE]", r.Events[len(r.Events)-1].Data)
	require.Contains(t, r.Body, "\n\n: keep-alive\n\n", "keep-alive comments while the tool was silent")
}
