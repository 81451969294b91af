package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// steerAgent is the agent of the steered turn: it waits 2 s (a timer: the steering message
// arrives meanwhile), then makes one Reason call, which takes the message in before its pass.
const steerAgent = "steerbench"

// withSteerAgent registers the steer agent beside what base registers.
func withSteerAgent(base func(*workflows.Registry) error) func(*workflows.Registry) error {
	return func(reg *workflows.Registry) error {
		if base != nil {
			if err := base(reg); err != nil {
				return err
			}
		}
		return reg.Add(&workflows.Definition{ID: steerAgent, Version: "1",
			Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
				if err := workflow.Sleep(ctx, 2*time.Second); err != nil {
					return workflows.NodeResult{}, err
				}
				_, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "answer", Input: in.Text()})
				return workflows.NodeResult{}, err
			}}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}})
	}
}

// post sends a chat request with busy policy busy ("": none) and reads its response; it fails
// on an error chunk.
func (s *actionsStack) post(ctx context.Context, session, clientTurn, text, busy string) error {
	body := map[string]any{"sessionId": session, "clientTurnId": clientTurn, "workflowId": steerAgent,
		"messages": []map[string]any{{"role": "user", "content": text}}}
	if busy != "" {
		body["busy"] = busy
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.kc.ChatURL, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || strings.Contains(string(out), `"type":"error"`) {
		return fmt.Errorf("%s: %d %s", text, resp.StatusCode, out)
	}
	return nil
}

// steerTurn is one new session's turn of the steer agent; with steer, a steering message is sent
// while the run waits, and its response read.
func (s *actionsStack) steerTurn(ctx context.Context, steer bool) (int, error) {
	session := uuid.NewString()
	runs := func() int {
		all, _ := s.list(ctx) // visibility: not a billed action
		n := 0
		for _, ex := range all {
			if strings.HasPrefix(ex[0], "run-") {
				n++
			}
		}
		return n
	}
	before := runs()
	first := make(chan error, 1)
	go func() { first <- s.post(ctx, session, "t1", "Order a lamp.", "") }()
	if steer {
		// Once the turn's run is listed, it is in its 2 s timer.
		for deadline := time.Now().Add(30 * time.Second); runs() == before; {
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("the turn's run was not listed within 30 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		if err := s.post(ctx, session, "t2", "Use the EU store.", "steer"); err != nil {
			return 0, err
		}
	}
	return 0, <-first
}

// TestActionsSteer (issue 35): what a steering message costs. The same turn of the steer agent
// with and without a steering message, side by side: the message costs the session's update
// (the request) and the signal that carries it to the run; it is taken in before the turn's one
// model pass (no pass more), and starts no workflow.
func TestActionsSteer(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := e.startActionsStack(t, stackSteer)
	defer s.stop()
	plain, _, err := s.measureTurn(ctx, "steer-agent", func(ctx context.Context) (int, error) { return s.steerTurn(ctx, false) })
	require.NoError(t, err)
	steered, _, err := s.measureTurn(ctx, "steered", func(ctx context.Context) (int, error) { return s.steerTurn(ctx, true) })
	require.NoError(t, err)
	t.Log(plain.line())
	t.Log(steered.line())
	require.Equal(t, plain.Updates+1, steered.Updates, "the steering message's request")
	require.Equal(t, plain.Signals+1, steered.Signals, "the message to the run")
	require.Equal(t, plain.Total+2, steered.Total)
	for _, k := range []struct {
		name string
		p, s int
	}{{"starts", plain.Starts, steered.Starts}, {"children", plain.Children, steered.Children}, {"activities", plain.Activities, steered.Activities},
		{"timers", plain.Timers, steered.Timers}, {"marker tasks", plain.MarkerTasks, steered.MarkerTasks}, {"upserts", plain.Upserts, steered.Upserts}} {
		require.Equal(t, k.p, k.s, k.name)
	}
}
