package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// steerStudioAgent waits 8 s (messages arrive meanwhile, and the page is opened), then makes
// one Reason call.
func steerStudioAgent(id string) *workflows.Definition {
	return &workflows.Definition{ID: id, Version: "1",
		Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if err := workflow.Sleep(ctx, 8*time.Second); err != nil {
				return workflows.NodeResult{}, err
			}
			_, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "answer", Input: in.Text()})
			return workflows.NodeResult{}, err
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}
}

// TestStudioShowsSteering (issue 35) opens a session's page in headless Chromium: while a turn
// runs, the page lists a queued message; once the turns ended, the transcript shows the
// steering message where the run took it in and marks the queued turn.
func TestStudioShowsSteering(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stamp := time.Now().UnixNano()
	agent := fmt.Sprintf("steer-%d", stamp)
	chosen, err := examples.Parse("hello")
	require.NoError(t, err)
	o := chosen.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		return reg.Add(steerStudioAgent(agent))
	}
	cfg := app.Config{TemporalAddress: srv.Address(), TaskQueue: fmt.Sprintf("studio-steer-%d", stamp), Namespace: "default",
		HTTPAddr: "127.0.0.1:0", FakeModels: true, WebPage: true}
	st := testenv.Run(t, ctx, cfg, o)
	base := "http://" + st.HTTPAddr + "/"
	session := fmt.Sprintf("steer-session-%d", stamp)
	post := func(turn, text, busy string) <-chan error {
		done := make(chan error, 1)
		go func() {
			b, _ := json.Marshal(map[string]any{"sessionId": session, "clientTurnId": turn, "workflowId": agent, "busy": busy,
				"messages": []map[string]any{{"role": "user", "content": text}}})
			resp, err := http.Post(base+"api/chat", "application/json", bytes.NewReader(b))
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("%s: %d %s", text, resp.StatusCode, body)
				}
			}
			done <- err
		}()
		return done
	}
	wait := func(ch <-chan error) {
		t.Helper()
		select {
		case err := <-ch:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("no response within a minute")
		}
	}
	first := post("t1", "Order a lamp.", "")
	time.Sleep(time.Second) // the turn waits in its 8 s timer
	steer := post("t2", "Use the EU store.", "steer")
	time.Sleep(500 * time.Millisecond)
	queued := post("t3", "Then say hi.", "enqueue")

	open := browser(t, ctx, base)
	p := open(t, "#/sessions/"+session)
	p.waitJS(`!!document.querySelector(".session-waiting li[data-waiting='queued']")`)
	require.Equal(t, "enqueue", p.attr(".session-waiting li[data-waiting='queued']", "data-kind"))
	wait(first)
	wait(steer)
	wait(queued)

	p = open(t, "#/sessions/"+session)
	p.waitJS(`document.querySelectorAll(".transcript-turn").length === 2 && !!document.querySelector(".transcript-turn .steered")`)
	require.Contains(t, p.text(".transcript-turn .steer"), "Use the EU store.")
	require.Equal(t, "taken in before pass 1 of agent", p.text(".transcript-turn .steered"))
	require.Equal(t, []string{"enqueue"}, p.allAttrs(".transcript-turn .arrival", "data-arrival"))
	require.Contains(t, p.text(".transcript-turn:nth-of-type(2) .prompt"), "Then say hi.")
	require.False(t, p.bool(`!!document.querySelector(".session-waiting")`), "nothing waits any more")
}
