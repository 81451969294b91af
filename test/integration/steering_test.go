package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"
)

// steerYAML is a one-node declarative agent: one Reason call on the fake OpenAI-compatible
// server (steerModel).
const steerYAML = `id: steeragent
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      model: openai:gpt-4.1-mini
edges:
  - [__start__, agent]
`

const (
	steerText  = "Use the EU store."
	slowPrompt = "Order a lamp (slow)"
)

// steerModel answers a user message ending in "(slow)" after delay ("Working slowly."), the
// steering message at once ("EU store it is."), anything else at once with "Echo: " and the
// message.
func steerModel(delay time.Duration) fake.Responder {
	return func(req providers.Request) fake.Turn {
		last := lastUserText(req.Messages)
		switch {
		case last == steerText:
			return fake.Turn{Text: "EU store it is."}
		case strings.HasSuffix(last, "(slow)"):
			return fake.Turn{Text: "Working slowly.", Delay: delay}
		}
		return fake.Turn{Text: "Echo: " + last}
	}
}

func lastUserText(msgs []providers.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == providers.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

// steerAgentDir writes the agent's YAML into a new folder (KORTYX_WORKFLOWS).
func steerAgentDir(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "steer.workflow.yaml"), []byte(steerYAML), 0o644))
	return dir
}

// waitRequests waits until the fake model has received n requests.
func waitRequests(t *testing.T, model *fakeserver.Server, n int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%d model requests", n), func() bool { return len(model.Requests()) >= n })
}

// wire is one of the two wires the policies are tested on: send posts a user message and
// returns the HTTP status, the response's text, whether it showed a steering message taken in
// (and which), whether it ended cancelled, and the error code of a refusal.
type wire struct {
	name string
	send func(t *testing.T, base, session, clientTurn, text, busy string) wireAnswer
}

type wireAnswer struct {
	Status    int
	Text      string
	Steers    []string // the contents of the steering messages the response shows taken in
	Cancelled bool
	Code      contracts.Code
	Body      string
}

var steerWires = []wire{
	{"kortyx-chat", func(t *testing.T, base, session, clientTurn, text, busy string) wireAnswer {
		body := prompt(session, clientTurn, "steeragent", text)
		if busy != "" {
			body["busy"] = busy
		}
		r := mpChat(t, base, body)
		a := wireAnswer{Status: r.Status, Body: r.Body}
		if r.Status != http.StatusOK {
			a.Code = errorCode(t, r.Body)
			return a
		}
		chunks := r.Chunks(t)
		a.Text = sessions.Buffer(chunks).Text
		for _, c := range chunks {
			switch {
			case c.Type == contracts.ChunkStatus && c.Steer != nil:
				a.Steers = append(a.Steers, c.Steer.Content)
			case c.Type == contracts.ChunkCancelled:
				a.Cancelled = true
			}
		}
		return a
	}},
	{"ai-sdk", func(t *testing.T, base, session, clientTurn, text, busy string) wireAnswer {
		body := map[string]any{"id": session, "trigger": "submit-message", "agent": "steeragent",
			"messages": []map[string]any{{"id": clientTurn, "role": "user", "parts": []map[string]any{{"type": "text", "text": text}}}}}
		if busy != "" {
			body["busy"] = busy
		}
		b, _ := json.Marshal(body)
		code, out := postJSON(t, base+"/api/ui/chat", string(b))
		a := wireAnswer{Status: code, Body: out}
		if code != http.StatusOK {
			a.Code = errorCode(t, out)
			return a
		}
		var sb strings.Builder
		for _, d := range sseData(out) {
			var p struct {
				Type  string          `json:"type"`
				Delta string          `json:"delta"`
				Data  contracts.Steer `json:"data"`
			}
			if json.Unmarshal([]byte(d), &p) != nil {
				continue
			}
			switch p.Type {
			case "text-delta":
				sb.WriteString(p.Delta)
			case "text-end":
				sb.WriteString(" ")
			case "data-kortyx-steer":
				a.Steers = append(a.Steers, p.Data.Content)
			case "abort":
				a.Cancelled = true
			}
		}
		a.Text = strings.TrimSpace(sb.String()) // texts joined with a space, as sessions.Buffer joins them
		return a
	}},
}

func errorCode(t *testing.T, body string) contracts.Code {
	var e struct {
		Failure contracts.Failure `json:"failure"`
	}
	_ = json.Unmarshal([]byte(body), &e)
	return e.Failure.Code
}

// async sends a message in the background.
func async(t *testing.T, w wire, base, session, clientTurn, text, busy string) <-chan wireAnswer {
	ch := make(chan wireAnswer, 1)
	go func() { ch <- w.send(t, base, session, clientTurn, text, busy) }()
	return ch
}

func receive(t *testing.T, ch <-chan wireAnswer) wireAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(90 * time.Second):
		t.Fatal("no response within 90 s")
		return wireAnswer{}
	}
}

// Issue 35: a message sent while the session's turn runs, with each policy, on two wires (the
// Kortyx chat route and the AI SDK's): reject refuses it (409 SESSION_BUSY), enqueue answers
// it after the running turn, interrupt cancels the running turn and answers both messages,
// steer adds it to the running turn's conversation — the model answers it in a pass of that
// turn, both responses show where it was taken in.
func TestBusyPolicies(t *testing.T) {
	model := fakeserver.New(steerModel(3 * time.Second))
	t.Cleanup(model.Close)
	tq := taskQueue(t)
	p := startProcess(t, tq, nil, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_WORKFLOWS="+steerAgentDir(t), "OPENAI_BASE_URL="+model.URL(),
		"KORTYX_EXAMPLES=none", "KORTYX_WEB_PAGE=1")
	base := p.apiURL(t)
	p.until(t, `msg="kortyx worker: polling task queue"`)

	for _, w := range steerWires {
		t.Run(w.name, func(t *testing.T) {
			session := func(policy string) string { return "busy-" + policy + "-" + w.name }
			// Each case starts a slow turn, and sends its message once the model has it.
			slow := func(s string) <-chan wireAnswer {
				n := len(model.Requests())
				ch := async(t, w, base, s, "t1", slowPrompt, "")
				waitRequests(t, model, n+1)
				return ch
			}

			t.Run("bad policy", func(t *testing.T) {
				a := w.send(t, base, session("bad"), "t1", "Hello?", "later")
				require.Equal(t, http.StatusBadRequest, a.Status, a.Body)
				_, err := viewOf(session("bad"))
				require.Equal(t, contracts.CodeInvalidSession, contracts.CodeOf(err), "nothing reached a session")
			})

			t.Run("reject", func(t *testing.T) {
				first := slow(session("reject"))
				a := w.send(t, base, session("reject"), "t2", "Hello?", "")
				require.Equal(t, http.StatusConflict, a.Status, a.Body)
				require.Equal(t, contracts.CodeSessionBusy, a.Code)
				a = w.send(t, base, session("reject"), "t3", "Hello?", "reject")
				require.Equal(t, contracts.CodeSessionBusy, a.Code, a.Body)
				require.Equal(t, "Working slowly.", receive(t, first).Text)
			})

			t.Run("enqueue", func(t *testing.T) {
				first := slow(session("enqueue"))
				second := async(t, w, base, session("enqueue"), "t2", "Then say hi.", sessions.BusyEnqueue)
				eventually(t, 30*time.Second, "the first message queued", func() bool {
					v, err := viewOf(session("enqueue"))
					return err == nil && len(v.Queued) == 1
				})
				third := async(t, w, base, session("enqueue"), "t3", "And bye.", sessions.BusyEnqueue)
				require.Equal(t, "Working slowly.", receive(t, first).Text)
				require.Equal(t, "Echo: Then say hi.", receive(t, second).Text)
				require.Equal(t, "Echo: And bye.", receive(t, third).Text)
				reqs := model.Requests()
				require.Equal(t, []string{slowPrompt, "Then say hi.", "And bye."}, []string{
					lastUserText(reqs[len(reqs)-3].Messages), lastUserText(reqs[len(reqs)-2].Messages), lastUserText(reqs[len(reqs)-1].Messages)},
					"one turn after the other, in the order sent")
			})

			t.Run("interrupt", func(t *testing.T) {
				first := slow(session("interrupt"))
				a := w.send(t, base, session("interrupt"), "t2", "Make it two.", sessions.BusyInterrupt)
				require.Equal(t, http.StatusOK, a.Status, a.Body)
				require.Equal(t, "Echo: "+slowPrompt+"\n\nMake it two.", a.Text, "the new turn has both messages")
				f := receive(t, first)
				require.True(t, f.Cancelled, f.Body)
				require.Empty(t, f.Text, f.Body)
			})

			t.Run("steer", func(t *testing.T) {
				n := len(model.Requests())
				first := slow(session("steer"))
				a := w.send(t, base, session("steer"), "t2", steerText, sessions.BusySteer)
				require.Equal(t, http.StatusOK, a.Status, a.Body)
				require.Equal(t, []string{steerText}, a.Steers, "the response begins where the run took the message in")
				require.Equal(t, "EU store it is.", a.Text)
				f := receive(t, first)
				require.Equal(t, []string{steerText}, f.Steers)
				require.Equal(t, "Working slowly. EU store it is.", f.Text)
				reqs := model.Requests()[n:]
				require.Len(t, reqs, 2, "one turn, two passes: the steering message did not start a turn")
				msgs := reqs[1].Messages
				require.Equal(t, []providers.Message{{Role: providers.RoleUser, Content: slowPrompt},
					{Role: providers.RoleAssistant, Content: "Working slowly."}, {Role: providers.RoleUser, Content: steerText}}, msgs[len(msgs)-3:])
				if w.name == "kortyx-chat" {
					studioShowsPolicies(t, base, session)
					recordHistory(t, tc, "steer-run", runOfSession(t, session("steer")))
					for _, policy := range []string{"enqueue", "interrupt", "steer"} {
						recordHistory(t, tc, "busy-"+policy+"-session", protocol.SessionWorkflowID(session(policy)))
					}
				}
			})
		})
	}
}

// Issue 35: a steering message and a queued one survive a worker killed (SIGKILL) between their
// arrival and their use. The API is a process of its own (--api-only, over Redis): the
// requests wait there while the turn's worker dies and another takes over the run.
func TestBusyPoliciesSurviveWorkerKill(t *testing.T) {
	model := fakeserver.New(steerModel(4 * time.Second))
	t.Cleanup(model.Close)
	redis := redistest.Start(t)
	tq := taskQueue(t)
	dir := steerAgentDir(t)
	env := []string{"KORTYX_REDIS_URL=" + redis.URL(), "KORTYX_WORKFLOWS=" + dir, "OPENAI_BASE_URL=" + model.URL(), "KORTYX_EXAMPLES=none"}
	api := startProcess(t, tq, []string{"--api-only"}, append(env, "KORTYX_HTTP_ADDR=127.0.0.1:0")...)
	base := api.apiURL(t)
	worker := func() *program {
		p := startProcess(t, tq, nil, env...)
		p.until(t, `msg="kortyx worker: polling task queue"`)
		return p
	}
	first := worker()
	w := steerWires[0]
	session := "busy-kill"
	turn := async(t, w, base, session, "t1", slowPrompt, "")
	waitRequests(t, model, 1)
	steer := async(t, w, base, session, "t2", steerText, sessions.BusySteer)
	v, err := viewOf(session)
	require.NoError(t, err)
	require.NotNil(t, v.Active)
	run := v.Active.RunID
	eventually(t, 30*time.Second, "the steering message in the run's history", func() bool {
		select {
		case a := <-steer:
			t.Fatalf("the steering message was answered before its use: %s", a.Body)
		default:
		}
		return signalled(t, run, protocol.SteerSignal)
	})
	// (Sent after the steering message: a message queued before it would take it after itself.)
	queued := async(t, w, base, session, "t3", "Then say hi.", sessions.BusyEnqueue)
	eventually(t, 30*time.Second, "the queued message in the session", func() bool {
		v, err := viewOf(session)
		return err == nil && len(v.Queued) == 1
	})
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	_ = first.cmd.Wait()
	worker()

	s := receive(t, steer)
	require.Equal(t, http.StatusOK, s.Status, s.Body)
	require.Equal(t, []string{steerText}, s.Steers)
	require.Equal(t, "EU store it is.", s.Text)
	f := receive(t, turn)
	require.Contains(t, f.Steers, steerText)
	require.True(t, strings.HasSuffix(f.Text, "EU store it is."), f.Text)
	q := receive(t, queued)
	require.Equal(t, "Echo: Then say hi.", q.Text)
	var steered, said int
	for _, r := range model.Requests() {
		switch lastUserText(r.Messages) {
		case steerText:
			steered++
		case "Then say hi.":
			said++
		}
	}
	require.Equal(t, 1, steered, "the steering message was taken in once")
	require.Equal(t, 1, said, "the queued message ran once")
}

// signalled reports whether run's history has a signal named name.
func signalled(t *testing.T, run, name string) bool {
	it := tc.GetWorkflowHistory(context.Background(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return false
		}
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == name {
			return true
		}
	}
	return false
}

// viewOf is a session's view, as the session service reads it.
func viewOf(session string) (sessions.SessionView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return service(tc, "").View(ctx, session)
}

// Issue 35: the steering policy on the other wires, each named per request the way its protocol
// carries extras: A2A (a message on the working task, metadata "kortyx/busy"), AG-UI (a run on
// the thread, forwardedProps.busy) and MCP (a call naming the session, _meta "kortyx/busy").
// The running turn (started on the chat route) takes the message in; each wire's answer is the
// response from there.
func TestSteerOnA2AAGUIAndMCP(t *testing.T) {
	model := fakeserver.New(steerModel(3 * time.Second))
	t.Cleanup(model.Close)
	p := startProcess(t, taskQueue(t), nil, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_WORKFLOWS="+steerAgentDir(t), "OPENAI_BASE_URL="+model.URL(),
		"KORTYX_EXAMPLES=none")
	base := p.apiURL(t)
	p.until(t, `msg="kortyx worker: polling task queue"`)
	chatWire := steerWires[0]
	t.Run("bad policy", func(t *testing.T) {
		code, body := postJSON(t, base+"/a2a/steeragent", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message",
			"messageId":"m-bad","role":"user","contextId":"bad-a2a","parts":[{"kind":"text","text":"hi"}],"metadata":{"kortyx/busy":"later"}}}}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"code":-32602`)
		code, body = postJSON(t, base+"/api/agui/steeragent", `{"threadId":"bad-agui","runId":"r-bad","state":{},"tools":[],"context":[],
			"messages":[{"id":"u-bad","role":"user","content":"hi"}],"forwardedProps":{"busy":"later"}}`)
		require.Equal(t, http.StatusBadRequest, code, body)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := mcpCaller(t, base+"/mcp", "").CallTool(ctx, &mcp.CallToolParams{Name: "steeragent", Arguments: map[string]any{"message": "hi"},
			Meta: mcp.Meta{"kortyx/sessionId": "bad-mcp", "kortyx/busy": "later"}})
		var we *jsonrpc.Error
		require.ErrorAs(t, err, &we)
		require.EqualValues(t, jsonrpc.CodeInvalidParams, we.Code)
		for _, s := range []string{"bad-a2a", "bad-agui", "bad-mcp"} {
			_, err := viewOf(s)
			require.Equal(t, contracts.CodeInvalidSession, contracts.CodeOf(err), "nothing reached session %s", s)
		}
	})
	// A2A's enqueue and interrupt on a working task: a task of its own in the same context.
	for _, policy := range []string{sessions.BusyEnqueue, sessions.BusyInterrupt} {
		t.Run("a2a "+policy, func(t *testing.T) {
			session := "a2a-" + policy
			n := len(model.Requests())
			first := async(t, chatWire, base, session, "t1", slowPrompt, "")
			waitRequests(t, model, n+1)
			v, err := viewOf(session)
			require.NoError(t, err)
			run := v.Active.RunID
			code, body := postJSON(t, base+"/a2a/steeragent", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message",
				"messageId":"m-`+policy+`","role":"user","taskId":"`+run+`","contextId":"`+session+`","parts":[{"kind":"text","text":"Then say hi."}],
				"metadata":{"kortyx/busy":"`+policy+`"}}}}`)
			require.Equal(t, http.StatusOK, code, body)
			var res struct {
				Result struct {
					ID        string `json:"id"`
					ContextID string `json:"contextId"`
					Status    struct {
						State string `json:"state"`
					} `json:"status"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &res), body)
			require.NotEqual(t, run, res.Result.ID, "a task of its own")
			require.Equal(t, session, res.Result.ContextID)
			require.Equal(t, "completed", res.Result.Status.State, body)
			f := receive(t, first)
			if policy == sessions.BusyEnqueue {
				require.Equal(t, "Working slowly.", f.Text, "the working task went on")
				require.Contains(t, body, "Echo: Then say hi.")
			} else {
				require.True(t, f.Cancelled, f.Body)
				require.Contains(t, body, `Echo: `+slowPrompt+`\n\nThen say hi.`)
			}
		})
	}
	for _, c := range []struct {
		name  string
		steer func(t *testing.T, session, run string) string // the wire's answer, as text
	}{
		{"a2a", func(t *testing.T, session, run string) string {
			code, body := postJSON(t, base+"/a2a/steeragent", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message",
				"messageId":"m-steer","role":"user","taskId":"`+run+`","contextId":"`+session+`","parts":[{"kind":"text","text":"`+steerText+`"}],
				"metadata":{"kortyx/busy":"steer"}}}}`)
			require.Equal(t, http.StatusOK, code, body)
			var res struct {
				Result struct {
					ID     string `json:"id"`
					Status struct {
						State string `json:"state"`
					} `json:"status"`
					History []struct {
						Role  string `json:"role"`
						Parts []struct {
							Text string `json:"text"`
						} `json:"parts"`
					} `json:"history"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &res), body)
			require.Equal(t, run, res.Result.ID, "the same task: %s", body)
			require.Equal(t, "completed", res.Result.Status.State, body)
			var said []string
			for _, m := range res.Result.History {
				for _, p := range m.Parts {
					said = append(said, m.Role+": "+p.Text)
				}
			}
			require.Equal(t, []string{"user: " + slowPrompt, "user: " + steerText, "agent: Working slowly.\nEU store it is."}, said,
				"the steering message in the task's history")
			return "EU store it is." // (the task holds the whole turn)
		}},
		{"ag-ui", func(t *testing.T, session, run string) string {
			code, body := postJSON(t, base+"/api/agui/steeragent", `{"threadId":"`+session+`","runId":"r-steer","state":{},"tools":[],"context":[],
				"messages":[{"id":"u-steer","role":"user","content":"`+steerText+`"}],"forwardedProps":{"busy":"steer"}}`)
			require.Equal(t, http.StatusOK, code, body)
			require.Contains(t, body, `"type":"CUSTOM","name":"kortyx.steer"`)
			require.Contains(t, body, `"type":"RUN_FINISHED"`)
			var text strings.Builder
			for _, d := range sseData(body) {
				var ev struct {
					Type  string `json:"type"`
					Delta string `json:"delta"`
				}
				if json.Unmarshal([]byte(d), &ev) == nil && ev.Type == "TEXT_MESSAGE_CONTENT" {
					text.WriteString(ev.Delta)
				}
			}
			return text.String()
		}},
		{"mcp", func(t *testing.T, session, run string) string {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := mcpCaller(t, base+"/mcp", "").CallTool(ctx, &mcp.CallToolParams{Name: "steeragent", Arguments: map[string]any{"message": steerText},
				Meta: mcp.Meta{"kortyx/sessionId": session, "kortyx/busy": "steer"}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Equal(t, run, res.Meta["kortyx/runId"], "the running turn's run")
			b, _ := json.Marshal(res.Content)
			return string(b)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			session := "steer-" + c.name
			n := len(model.Requests())
			first := async(t, chatWire, base, session, "t1", slowPrompt, "")
			waitRequests(t, model, n+1)
			v, err := viewOf(session)
			require.NoError(t, err)
			require.NotNil(t, v.Active)
			answer := c.steer(t, session, v.Active.RunID)
			require.Contains(t, answer, "EU store it is.")
			require.NotContains(t, answer, "Working slowly.", "the answer begins where the run took the message in")
			f := receive(t, first)
			require.Equal(t, []string{steerText}, f.Steers)
			require.Equal(t, "Working slowly. EU store it is.", f.Text)
			require.Len(t, model.Requests()[n:], 2, "one turn, two passes")
		})
	}
}

// Issue 35: the chat route's transcript hook sees how the session took each message:
// OnTurnAccepted's Kind is "prompt" for a turn of its own, "steer" for a steering message (when
// the session took it in, before its response), "enqueue" for a queued message (when its turn
// starts) and "interrupt" for one that stopped the running turn.
func TestTurnAcceptedKinds(t *testing.T) {
	model := fake.NewResponder(steerModel(2 * time.Second)).WithID("fake")
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	w := newWorker(tc, e.tq, reasonAgent(t, "steerhooks"), &activities.Activities{Stream: e.broker, Providers: providers.NewSet(model)})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	f := newFinalized()
	h, err := chat.NewHandler(newService(t, tc, e.broker, e.tq), f.options(chat.Options{AllowUnauthenticated: true}))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	session := "hooks-" + e.tq
	send := func(turn, text, busy string) <-chan sseResponse {
		ch := make(chan sseResponse, 1)
		body := prompt(session, turn, "steerhooks", text)
		if busy != "" {
			body["busy"] = busy
		}
		go func() { ch <- mpPost(t, srv.URL, body) }()
		return ch
	}
	wait := func(ch <-chan sseResponse) sseResponse {
		select {
		case r := <-ch:
			require.Equal(t, http.StatusOK, r.Status, r.Body)
			return r
		case <-time.After(time.Minute):
			t.Fatal("no response within a minute")
			return sseResponse{}
		}
	}
	slow := func(turn string) <-chan sseResponse {
		n := model.Calls()
		ch := send(turn, slowPrompt, "")
		eventually(t, 30*time.Second, "the model request", func() bool { return model.Calls() > n })
		return ch
	}
	first := slow("t1")
	wait(send("t2", steerText, sessions.BusySteer))
	wait(first)
	third := slow("t3")
	queued := send("t4", "Then say hi.", sessions.BusyEnqueue)
	wait(third)
	wait(queued)
	fifth := slow("t5")
	wait(send("t6", "Make it two.", sessions.BusyInterrupt))
	wait(fifth)

	f.mu.Lock()
	defer f.mu.Unlock()
	var kinds []string
	for _, a := range f.accepted {
		kinds = append(kinds, a.ClientTurnID+" "+a.Kind)
	}
	require.Equal(t, []string{"t1 prompt", "t2 steer", "t3 prompt", "t4 enqueue", "t5 prompt", "t6 interrupt"}, kinds)
}

// studioShowsPolicies checks what the Studio draws of each policy (the JSON its pages read):
// the steered run's trace has the message's arrival and where it was taken in; the transcript
// marks the queued turns and the interrupting one.
func studioShowsPolicies(t *testing.T, base string, session func(string) string) {
	t.Helper()
	get := func(path string, out any) {
		t.Helper()
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	type entry struct {
		Kind    string `json:"kind"`
		Text    string `json:"text"`
		Node    string `json:"node"`
		Step    *int   `json:"step"`
		SteerID string `json:"steerId"`
	}
	var trace struct {
		Entries []entry `json:"entries"`
	}
	get("/api/runs/"+runOfSession(t, session("steer")), &trace)
	var steers []entry
	for _, e := range trace.Entries {
		if e.Kind == "steer" || e.Kind == "steered" {
			e.SteerID = ""
			steers = append(steers, e)
		}
	}
	one := 1
	require.Equal(t, []entry{{Kind: "steer", Text: steerText}, {Kind: "steered", Text: steerText, Node: "agent", Step: &one}}, steers)
	arrivals := func(policy string) []string {
		var tr struct {
			Turns []struct {
				Arrival string `json:"arrival"`
			} `json:"turns"`
		}
		get("/api/sessions/"+session(policy)+"/transcript", &tr)
		var out []string
		for _, turn := range tr.Turns {
			out = append(out, turn.Arrival)
		}
		return out
	}
	require.Equal(t, []string{"", "enqueue", "enqueue"}, arrivals("enqueue"))
	require.Equal(t, []string{"", "interrupt"}, arrivals("interrupt"))
}

// Issue 35: a steering message the running turn does not take in (its node calls no model after
// the message arrived) becomes the session's next turn, and its request follows that turn: its
// response answers the message.
func TestSteerNotTakenInBecomesTheNextTurn(t *testing.T) {
	model := fake.NewResponder(steerModel(time.Second)).WithID("fake")
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: "steerlate", Version: "1",
		Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "reason", Model: providers.Model("fake:test"), Input: in.Text()}); err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{}, workflow.Sleep(ctx, 6*time.Second) // no model pass after this
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	w := newWorker(tc, e.tq, reg, &activities.Activities{Stream: e.broker, Providers: providers.NewSet(model)})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	h, err := chat.NewHandler(newService(t, tc, e.broker, e.tq), chat.Options{AllowUnauthenticated: true})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	session := "late-" + e.tq
	first := make(chan sseResponse, 1)
	go func() { first <- mpPost(t, srv.URL, prompt(session, "t1", "steerlate", "Order a lamp.")) }()
	eventually(t, 30*time.Second, "the turn's model pass", func() bool { return model.Calls() == 1 })
	// The pass answers at once; the message is sent once the run is in its 6 s sleep.
	time.Sleep(2 * time.Second)
	body := prompt(session, "t2", "steerlate", steerText)
	body["busy"] = sessions.BusySteer
	r := mpPost(t, srv.URL, body)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	chunks := r.Chunks(t)
	require.Equal(t, "EU store it is.", sessions.Buffer(chunks).Text, r.Body)
	for _, c := range chunks {
		require.Nil(t, c.Steer, "not taken in: no status chunk shows it")
	}
	f := <-first
	require.Equal(t, "Echo: Order a lamp.", sessions.Buffer(f.Chunks(t)).Text)
	require.Equal(t, 2, model.Calls(), "the first turn's pass, then the message's own turn")
	require.Equal(t, steerText, lastUserText(model.Requests()[1].Messages))
	v, err := viewOf(session)
	require.NoError(t, err)
	require.Len(t, v.Checkpoints, 3, "session start and two turns")
}
