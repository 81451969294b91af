package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// fakeClient is a Temporal client whose session queries fail with queryErr; it records the
// calls that would start or update a session (and fails them).
type fakeClient struct {
	client.Client
	queryErr error
	mu       sync.Mutex
	calls    []string
	bounded  []bool // whether each update's context had a deadline
}

func (f *fakeClient) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeClient) QueryWorkflow(context.Context, string, string, string, ...any) (converter.EncodedValue, error) {
	f.record("query")
	return nil, f.queryErr
}

func (f *fakeClient) NewWithStartWorkflowOperation(client.StartWorkflowOptions, any, ...any) client.WithStartWorkflowOperation {
	return nil
}

func (f *fakeClient) UpdateWithStartWorkflow(context.Context, client.UpdateWithStartWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	f.record("start")
	return nil, errors.New("fake: no turn starts here")
}

// GetWorkflowUpdateHandle is asked for the result of a start-turn update whose caller left
// (sessions.Service waits for it apart from the caller): the fake has none.
func (f *fakeClient) GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions) client.WorkflowUpdateHandle {
	return noUpdate{}
}

type noUpdate struct{ client.WorkflowUpdateHandle }

func (noUpdate) Get(context.Context, any) error { return errors.New("fake: no update here") }

func (f *fakeClient) UpdateWorkflow(ctx context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	f.record("update " + o.UpdateName)
	_, ok := ctx.Deadline()
	f.mu.Lock()
	f.bounded = append(f.bounded, ok)
	f.mu.Unlock()
	return nil, errors.New("fake: no update here")
}

func fakeHandler(t *testing.T, fc *fakeClient) *Handler {
	t.Helper()
	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	h, err := New(internalService(t, fc, stream.NewMemory(stream.MemoryOptions{}), reg, ""), Options{AllowUnauthenticated: true})
	require.NoError(t, err)
	return h
}

// A call naming a session looks up its open question first: only a session that does not
// exist goes on to a new turn; a lookup that fails (here: no worker answers the query) fails
// the call and starts nothing, since a new prompt would supersede the question.
func TestViewFailureStartsNoTurn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		queryErr error
		calls    []string
		code     contracts.Code
	}{
		{"lookup fails", serviceerror.NewDeadlineExceeded("no poller answered the query"), []string{"query"}, contracts.CodeTemporalUnavailable},
		{"no such session", serviceerror.NewNotFound("workflow not found"), []string{"query", "start"}, contracts.CodeExecutionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeClient{queryErr: tc.queryErr}
			srv := httptest.NewServer(fakeHandler(t, fc))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
			require.NoError(t, err)
			defer func() { _ = cs.Close() }()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "back"},
				Meta: mcp.Meta{"kortyx/sessionId": "mcp-view-1"}})
			require.NoError(t, err)
			require.True(t, res.IsError)
			require.Equal(t, "failed", res.Meta["kortyx/status"])
			b, err := json.Marshal(res.Meta["kortyx/failure"])
			require.NoError(t, err)
			var f contracts.Failure
			require.NoError(t, json.Unmarshal(b, &f))
			require.Equal(t, tc.code, f.Code)
			require.NotContains(t, string(b), "poller")
			fc.mu.Lock()
			defer fc.mu.Unlock()
			require.Equal(t, tc.calls, fc.calls)
		})
	}
}

// What a cancelled call still does (stop its run, answer its question with cancel) runs on a
// context without the call's cancel but with a deadline: with no worker it does not wait for
// ever.
func TestCleanupIsBounded(t *testing.T) {
	fc := &fakeClient{}
	h := fakeHandler(t, fc)
	c := &call{h: h, t: h.tools["hello"], session: "mcp-cancel-1"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // notifications/cancelled: no cause
	_, err := c.failed(ctx, "run-1", errors.New("the stream read ended"))
	require.ErrorIs(t, err, context.Canceled)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	require.Len(t, fc.calls, 1)
	require.Contains(t, fc.calls[0], "update ")
	require.Equal(t, []bool{true}, fc.bounded)
	bg, stop := detached(ctx)
	defer stop()
	require.NoError(t, bg.Err())
	deadline, ok := bg.Deadline()
	require.True(t, ok)
	require.WithinDuration(t, time.Now().Add(cleanupTimeout), deadline, 5*time.Second)
}

// startClient is a Temporal client whose first session start waits for its context (the
// client cancels the call while the turn is being started) and whose next one reattaches to
// run "run-7"; it records the session updates.
type startClient struct {
	fakeClient
	started chan struct{}
	starts  int
	turns   []map[string]any // the turn request of each start
}

type turnHandle struct {
	client.WorkflowUpdateHandle
	runID string
}

func (h turnHandle) Get(_ context.Context, v any) error {
	b, _ := json.Marshal(map[string]any{"sessionId": "mcp-race-1", "runId": h.runID, "reattached": true})
	return json.Unmarshal(b, v)
}

func (f *startClient) UpdateWithStartWorkflow(ctx context.Context, o client.UpdateWithStartWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	var turn map[string]any
	raw, _ := json.Marshal(o.UpdateOptions.Args[0])
	_ = json.Unmarshal(raw, &turn)
	f.mu.Lock()
	f.starts++
	f.turns = append(f.turns, turn)
	first := f.starts == 1
	f.mu.Unlock()
	if first {
		close(f.started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	f.record("start again")
	return turnHandle{runID: "run-7"}, nil
}

func (f *startClient) UpdateWorkflow(ctx context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	f.record("update " + o.UpdateName + " " + o.Args[0].(string))
	return turnHandle{}, nil
}

// A client that cancels while its turn is being started leaves no turn behind: the call
// reattaches to the turn by its ClientTurnID and stops that run.
func TestCancelWhileStartingStopsTheTurn(t *testing.T) {
	fc := &startClient{fakeClient: fakeClient{queryErr: serviceerror.NewNotFound("workflow not found")}, started: make(chan struct{})}
	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	h, err := New(internalService(t, fc, stream.NewMemory(stream.MemoryOptions{}), reg, ""), Options{AllowUnauthenticated: true})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	require.NoError(t, err)
	defer func() { _ = cs.Close() }()
	callCtx, cancelCall := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"}, Meta: mcp.Meta{"kortyx/sessionId": "mcp-race-1"}})
		done <- err
	}()
	<-fc.started
	cancelCall()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		return len(fc.calls) == 3
	}, 10*time.Second, 10*time.Millisecond)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	require.Equal(t, []string{"query", "start again", "update " + protocol.SessionStopUpdate + " run-7"}, fc.calls)
	// The host sent no kortyx/turnId: the call named its turn, and reattached by that name.
	require.Len(t, fc.turns, 2)
	require.Regexp(t, `^mcp-turn-[0-9a-f-]{36}$`, fc.turns[0]["clientTurnId"])
	require.Equal(t, fc.turns[0]["clientTurnId"], fc.turns[1]["clientTurnId"])
	require.Nil(t, fc.turns[0]["reconnect"])
	require.Equal(t, true, fc.turns[1]["reconnect"])
}
