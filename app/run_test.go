package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// runInBackground runs Run until the test ends and returns what Options.Started saw.
func runInBackground(t *testing.T, cfg Config, o Options) Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan Running, 1)
	o.Started = func(r Running) { started <- r }
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, o) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "Run ends without an error when its context ends")
	})
	select {
	case r := <-started:
		return r
	case err := <-done:
		t.Fatalf("Run returned before it started: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("Run did not start within a minute")
	}
	return Running{}
}

// Run composes a worker from the options: the agents of Register on the providers of Models,
// the program's own registrations, the development HTTP API with a ready worker.
func TestRunComposesTheWorker(t *testing.T) {
	_, cfg := devServer(t)
	cfg.TaskQueue, cfg.HTTPAddr = "run-worker", "127.0.0.1:0"
	agent := &workflows.Definition{ID: "asks-model", Version: "1", Nodes: map[string]workflows.Node{"n": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "r", Input: in.Text()})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
	}}}, Edges: []workflows.Edge{{From: protocol.StartNode, To: "n"}}}
	registered := false
	r := runInBackground(t, cfg, Options{
		Register:       func(reg *workflows.Registry) error { return reg.Add(agent) },
		Models:         []providers.Provider{fake.New(fake.Text("from my model")).WithID("mine")},
		Model:          "mine:m",
		RegisterWorker: func(worker.Registry) { registered = true },
	})
	require.True(t, registered)
	require.Equal(t, "mine:m", r.DefaultModel)
	require.NotEmpty(t, r.HTTPAddr)
	status, body, _ := get(t, "http://"+r.HTTPAddr+"/readyz")
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, map[string]any{"temporal": "ok", "worker": "ok"}, body["checks"])

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := kortyx.StartRun(ctx, r.Client, contracts.RunInput{Workflow: "asks-model", Input: json.RawMessage(`"hi"`)},
		kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
	require.NoError(t, err)
	var res contracts.RunResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, "from my model", res.State.Data["answer"])
}

// Options.HTTP replaces the development HTTP API, on the program's client and broker.
func TestRunServesTheProgramsHandler(t *testing.T) {
	_, cfg := devServer(t)
	cfg.TaskQueue, cfg.HTTPAddr = "run-handler", "127.0.0.1:0"
	var gotBroker stream.Broker
	r := runInBackground(t, cfg, Options{Models: []providers.Provider{fake.New()},
		HTTP: func(c client.Client, b stream.Broker) (http.Handler, error) {
			require.NotNil(t, c)
			gotBroker = b
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"mine":true}`) }), nil
		}})
	require.Same(t, r.Broker, gotBroker)
	status, body, _ := get(t, "http://"+r.HTTPAddr+"/readyz")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"mine": true}, body, "the program's handler, not the development API")
}
