package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/test/kortyxwire"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// Workflows of the Kortyx-client scenarios, besides the examples (hello, triage, support,
// research).
const (
	kwText     = "kwtext"     // streams "Hello, world" as text
	kwContract = "kwcontract" // streams an output contract (subject set, body as text deltas)
	kwBoom     = "kwboom"     // its model fails (HTTP 400, not retryable)
	kwCustom   = "kwcustom"   // asks a custom question {plan} and answers "Plan: <plan>"
	kwSlow     = "kwslow"     // says it is working, then sleeps a minute (to be stopped)
)

// kortyxOptions returns the program options of the examples plus the kw* workflows, with
// their models: "openai" plays the support desk's scripted model (the default provider, as in
// dev mode), kwtext:m, kwletter:m and kwboom:m the scenarios'.
func kortyxOptions(t *testing.T) app.Options {
	t.Helper()
	chosen, err := examples.Parse("all")
	require.NoError(t, err)
	o := chosen.Options()
	o.Model = "openai:gpt-4.1-mini"
	letter, err := contracts.NewOutputContract("A letter.", "letter", "1", contracts.MustCompileSchema(
		`{"type":"object","properties":{"subject":{"type":"string"},"body":{"type":"string"}},"required":["subject","body"]}`),
		map[string]contracts.StructuredKind{"subject": contracts.StructuredSet, "body": contracts.StructuredTextDelta})
	require.NoError(t, err)
	o.Models = []providers.Provider{
		fake.NewResponder(support.FakeModel()).WithID("openai"),
		fake.NewResponder(func(providers.Request) fake.Turn { return fake.Turn{Deltas: []string{"Hello", ", ", "world"}} }).WithID("kwtext"),
		// One stack runs the contract scenario once: the emit call, the streamed value, the answer.
		fake.New(fake.Calls(providers.ToolCall{Name: "kortyx_stream_emit__letter", Arguments: json.RawMessage(`{"instruction":"write"}`)}),
			fake.Turn{Deltas: []string{`{"subject":"Hi",`, `"body":"Dear `, `Ada"}`}}, fake.Text("Sent.")).WithID("kwletter"),
		fake.NewResponder(func(providers.Request) fake.Turn {
			return fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 400, Message: "Provider request failed (HTTP 400)."}}
		}).WithID("kwboom"),
	}
	var defs []*workflows.Definition
	one := func(id string, run workflows.NodeFunc) {
		defs = append(defs, (&workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{"n": {Run: run}},
			Edges: []workflows.Edge{{From: protocol.StartNode, To: "n"}}}))
	}
	reason := func(model string, outs *hooks.Outputs) workflows.NodeFunc {
		return func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "agent", Model: providers.Model(model), Input: in.Text(), Outputs: outs})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
		}
	}
	one(kwText, reason("kwtext:m", nil))
	one(kwContract, reason("kwletter:m", &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"letter": letter}}))
	one(kwBoom, reason("kwboom:m", nil))
	one(kwCustom, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "plan", Kind: contracts.InterruptCustom, Question: "Pick a plan",
			Contract: "plan", Request: map[string]any{"choices": []string{"basic", "pro"}},
			ResponseSchema: contracts.MustCompileSchema(`{"type":"object","properties":{"plan":{"enum":["basic","pro"]}},"required":["plan"]}`)})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		var v struct{ Plan string }
		if err := json.Unmarshal(a.Value, &v); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: "Plan: " + v.Plan}}, nil
	})
	one(kwSlow, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{DataType: "progress", Data: map[string]any{"step": "working"}}); err != nil {
			return workflows.NodeResult{}, err
		}
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: "Finished."}}, nil
	})
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		for _, d := range defs {
			if err := reg.Add(d); err != nil {
				return err
			}
		}
		return nil
	}
	return o
}

// startKortyxStack starts the dev-mode stack (app.Run: worker and HTTP API in one process) on
// a new task queue, over Redis when redisURL is set; it returns the task queue and the API's
// address.
func startKortyxStack(t *testing.T, redisURL string) (tq, addr string) {
	t.Helper()
	tq = taskQueue(t)
	o := kortyxOptions(t)
	o.DefaultWorkflow = support.WorkflowID
	st := testenv.Run(t, context.Background(), app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, RedisURL: redisURL, HTTPAddr: "127.0.0.1:0"}, o)
	return tq, st.HTTPAddr
}

// kortyxSession is one useChat session: its id and the messages it keeps (history is sent with
// every request, as useChat does by default).
type kortyxSession struct {
	t        *testing.T
	c        *kortyxwire.Client
	id       string
	workflow string
	history  []kortyxwire.Message
}

func newKortyxSession(t *testing.T, c *kortyxwire.Client, workflow string) *kortyxSession {
	return &kortyxSession{t: t, c: c, id: uuid.NewString(), workflow: workflow}
}

// send sends a user message (or an answer) and returns the chunks; every chunk must pass
// Kortyx's schema. The assistant's text is added to the history as useChat does.
func (s *kortyxSession) send(m kortyxwire.Message) []kortyxwire.Chunk {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chunks, err := s.c.Send(ctx, s.id, s.workflow, append(append([]kortyxwire.Message(nil), s.history...), m))
	require.NoError(s.t, err, "chunks so far: %v", chunks)
	for _, c := range chunks {
		require.NoError(s.t, kortyxwire.Check(c), "%v", c)
	}
	require.NotEmpty(s.t, chunks)
	require.Equal(s.t, "done", chunks[len(chunks)-1].Type(), "%v", chunks)
	var text strings.Builder
	for _, c := range chunks {
		switch c.Type() {
		case "text-delta":
			text.WriteString(c.String("delta"))
		case "message":
			text.WriteString(c.String("content"))
		}
	}
	s.history = append(s.history, kortyxwire.Message{Role: m.Role, Content: m.Content}, kortyxwire.Message{Role: "assistant", Content: text.String()})
	return chunks
}

func (s *kortyxSession) say(text string) []kortyxwire.Chunk {
	return s.send(kortyxwire.Message{Role: "user", Content: text})
}

// kwTypes are the chunks' types, a run of text-delta or structured-data chunks as one
// "text-delta…" or "structured-data…".
func kwTypes(chunks []kortyxwire.Chunk) []string {
	var out []string
	for _, c := range chunks {
		t := c.Type()
		if t == "text-delta" || t == "structured-data" {
			t += "…"
			if len(out) > 0 && out[len(out)-1] == t {
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

func kwFind(t *testing.T, chunks []kortyxwire.Chunk, typ string) kortyxwire.Chunk {
	t.Helper()
	for _, c := range chunks {
		if c.Type() == typ {
			return c
		}
	}
	t.Fatalf("no %s chunk in %v", typ, chunks)
	return nil
}

func kwJoin(chunks []kortyxwire.Chunk) string {
	var b strings.Builder
	for _, c := range chunks {
		switch c.Type() {
		case "text-delta":
			b.WriteString(c.String("delta"))
		case "message":
			b.WriteString(c.String("content"))
		}
	}
	return b.String()
}

// kortyxScenarios runs every scenario with Kortyx's client rules against the chat and checkpoint
// routes at base.
func kortyxScenarios(t *testing.T, base string) {
	c := &kortyxwire.Client{ChatURL: base + "/api/chat", Checkpoints: base + "/api/checkpoints", ReadSize: 7}

	t.Run("framing", func(t *testing.T) {
		raw := func(headers ...string) string {
			body := map[string]any{"sessionId": uuid.NewString(), "workflowId": "hello", "messages": []map[string]any{{"role": "user", "content": "hi"}}}
			b, err := json.Marshal(body)
			require.NoError(t, err)
			req, err := http.NewRequest(http.MethodPost, base+"/api/chat", strings.NewReader(string(b)))
			require.NoError(t, err)
			for _, h := range headers {
				k, v, _ := strings.Cut(h, ": ")
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			out, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return string(out)
		}
		kortyx := raw()
		require.NotContains(t, kortyx, "id:")
		require.NotContains(t, kortyx, "\r")
		require.True(t, strings.HasSuffix(kortyx, "data: [DONE]\n\n"), kortyx)
		for _, ev := range strings.Split(strings.TrimSuffix(kortyx, "\n\n"), "\n\n") {
			require.True(t, strings.HasPrefix(ev, "data: ") || strings.HasPrefix(ev, ": "), "event %q", ev)
			require.Equal(t, 1, strings.Count(ev, "\n")+1, "one line per event: %q", ev)
		}
		resumable := raw("X-Kortyx-Resumable: 1")
		require.Regexp(t, `^data: \{"type":"session",[^\n]*\n\nid: 1\ndata: \{"type":"interrupt"`, resumable)
		require.Contains(t, resumable, "\n\nid: 3\ndata: {\"type\":\"done\"}\n\ndata: [DONE]\n\n")
	})

	t.Run("hello, rollback and fork", func(t *testing.T) {
		s := newKortyxSession(t, c, "hello")
		first := s.say("hi")
		require.Equal(t, []string{"session", "interrupt", "checkpoint", "done"}, kwTypes(first))
		ask := kwFind(t, first, "interrupt")
		require.Equal(t, map[string]any{"kind": "text", "multiple": false, "question": "What is your name?", "id": "name"}, ask["input"])
		cp1 := kwFind(t, first, "checkpoint").String("id")
		second := s.send(kortyxwire.Answer(ask, nil, "Ada"))
		require.Equal(t, []string{"session", "message", "checkpoint", "done"}, kwTypes(second))
		require.Equal(t, "Hello, Ada!", kwJoin(second))

		// Rollback with Kortyx's request: no sessionId; head is the checkpoint id.
		ctx := context.Background()
		rb, head, err := c.Rollback(ctx, cp1)
		require.NoError(t, err)
		require.Equal(t, cp1, head)
		require.Equal(t, s.id, rb["sessionId"])
		require.IsType(t, float64(0), rb["headCheckpoint"].(map[string]any)["createdAt"], "createdAt in milliseconds")
		again := s.send(kortyxwire.Answer(ask, nil, "Grace"))
		require.Equal(t, "Hello, Grace!", kwJoin(again), "the question of cp1 is asked again, with the same token")

		// Fork cp1 into a new session; its question has a new token, answered there.
		fk, err := c.Fork(ctx, cp1)
		require.NoError(t, err)
		require.Equal(t, s.id, fk["parentSessionId"])
		require.Equal(t, cp1, fk["forkedFrom"])
		cp := fk["checkpoint"].(map[string]any)
		require.IsType(t, float64(0), cp["createdAt"])
		pending := cp["activePendingRequests"].([]any)[0].(map[string]any)
		require.NotEqual(t, ask.String("resumeToken"), pending["token"])
		forked := &kortyxSession{t: t, c: c, id: fk["sessionId"].(string), workflow: "hello"}
		out := forked.send(kortyxwire.Answer(kortyxwire.Chunk{"resumeToken": pending["token"], "requestId": pending["requestId"]}, nil, "Linus"))
		require.Equal(t, "Hello, Linus!", kwJoin(out))

		// A checkpoint the server never saw: 404 with a message saying what to send.
		status, body, err := c.Checkpoint(ctx, map[string]any{"action": "rollback", "checkpointId": "cp-unknown"})
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, status)
		require.Equal(t, "NOT_FOUND", body.(map[string]any)["failure"].(map[string]any)["code"])
	})

	t.Run("triage", func(t *testing.T) {
		s := newKortyxSession(t, c, "triage")
		first := s.say("My invoice shows a refund that never arrived")
		confirm := kwFind(t, first, "interrupt")
		in := confirm["input"].(map[string]any)
		require.Equal(t, "choice", in["kind"])
		require.Equal(t, `Open a billing ticket "Billing question"?`, in["question"])
		require.Equal(t, []string{"session", "structured-data…", "interrupt", "checkpoint", "done"}, kwTypes(first))
		last := s.send(kortyxwire.Answer(confirm, []string{"open"}, ""))
		require.Equal(t, []string{"session", "message", "checkpoint", "done"}, kwTypes(last), "%v", last)
	})

	for _, tc := range []struct {
		name, prompt, decision, answer string
	}{
		{"support approve", "Please refund order A-1001, it arrived broken.", "approve", "Done: order A-1001 is refunded (R-5001, full amount)."},
		{"support deny", "Refund A-1003 please", "deny", "I have not refunded order A-1003: Tool call denied by user."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newKortyxSession(t, c, "support")
			first := s.say(tc.prompt)
			require.Equal(t, []string{"session", "tool-call-start", "tool-call-result", "interrupt", "checkpoint", "done"}, kwTypes(first))
			ask := kwFind(t, first, "interrupt")
			require.Equal(t, "Approve refund?", ask["input"].(map[string]any)["question"])
			last := s.send(kortyxwire.Answer(ask, []string{tc.decision}, ""))
			require.Equal(t, tc.answer, kwJoin(last))
			require.Equal(t, "checkpoint", kwTypes(last)[len(kwTypes(last))-2])
		})
	}

	t.Run("research", func(t *testing.T) {
		s := newKortyxSession(t, c, "research")
		first := s.say("Solar panels on the office roof")
		ask := kwFind(t, first, "interrupt")
		in := ask["input"].(map[string]any)
		require.Equal(t, "Include speculative risks?", in["question"], "the child's question reaches the client")
		last := s.send(kortyxwire.Answer(ask, []string{"no"}, ""))
		require.Equal(t, "done", last[len(last)-1].Type())
		require.Equal(t, []string{"session", "structured-data…", "interrupt", "checkpoint", "done"}, kwTypes(first))
		require.Equal(t, []string{"session", "message", "structured-data…", "checkpoint", "done"}, kwTypes(last))
		require.Equal(t, "Research on Solar panels on the office roof. background: the idea is older than its current popularity. "+
			"practice: teams start small and measure before they scale. risks: failures come from unclear ownership and unchecked automation. (9 sources)", kwJoin(last))
	})

	t.Run("streamed text", func(t *testing.T) {
		s := newKortyxSession(t, c, kwText)
		out := s.say("greet")
		require.Equal(t, []string{"session", "text-start", "text-delta…", "text-end", "checkpoint", "done"}, kwTypes(out))
		require.Equal(t, "Hello, world", kwJoin(out))
	})

	t.Run("streamed output contract", func(t *testing.T) {
		s := newKortyxSession(t, c, kwContract)
		out := s.say("write")
		var kinds []string
		var final map[string]any
		for _, ch := range out {
			if ch.Type() == "structured-data" {
				kinds = append(kinds, ch.String("kind"))
				if ch.String("kind") == "final" {
					final, _ = ch["data"].(map[string]any)
				}
			}
		}
		require.Equal(t, []string{"set", "text-delta", "text-delta", "final"}, kinds, "%v", out)
		require.Equal(t, map[string]any{"subject": "Hi", "body": "Dear Ada"}, final)
		require.Contains(t, kwJoin(out), "Sent.")
	})

	t.Run("model error", func(t *testing.T) {
		s := newKortyxSession(t, c, kwBoom)
		out := s.say("fail")
		require.Equal(t, []string{"session", "error", "done"}, kwTypes(out), "%v", out)
		e := kwFind(t, out, "error")
		f := e["failure"].(map[string]any)
		require.Equal(t, "PROVIDER_HTTP_ERROR", f["code"])
		require.Equal(t, "provider", f["category"])
	})

	t.Run("custom question answered as Kortyx sends it", func(t *testing.T) {
		s := newKortyxSession(t, c, kwCustom)
		first := s.say("plan")
		ask := kwFind(t, first, "interrupt")
		require.Equal(t, map[string]any{"kind": "text", "multiple": false, "question": "Pick a plan", "id": "plan", "contract": "plan",
			"request": map[string]any{"choices": []any{"basic", "pro"}}}, ask["input"])
		bad := s.send(kortyxwire.Answer(ask, nil, `{"plan":"gold"}`))
		// Refused before the turn (400): Kortyx's route call makes it an error chunk and done.
		require.Equal(t, []kortyxwire.Chunk{{"type": "error", "message": "Answer does not match the response schema. (plan: value must be one of 'basic', 'pro')"},
			{"type": "done"}}, bad)
		out := s.send(kortyxwire.Answer(ask, nil, `{"plan":"pro"}`))
		require.Equal(t, "Plan: pro", kwJoin(out))
	})

	t.Run("question cancelled", func(t *testing.T) {
		// Kortyx (spec §5, Cancel): the pending question is deleted and the stream yields only
		// done — no error chunk, which useChat would show as a failed turn.
		s := newKortyxSession(t, c, "hello")
		ask := kwFind(t, s.say("hi"), "interrupt")
		cancel := kortyxwire.Answer(ask, nil, "")
		cancel.Metadata["resume"].(map[string]any)["cancel"] = true
		out := s.send(cancel)
		require.Equal(t, []string{"session", "done"}, kwTypes(out), "%v", out)
		_, hasData := out[1]["data"]
		require.False(t, hasData, "done without state after a cancel")
		again := s.send(kortyxwire.Answer(ask, nil, "Ada"))
		require.Equal(t, []string{"error", "done"}, kwTypes(again), "the question is gone (400): %v", again)
		require.Equal(t, fmt.Sprintf("Interrupt is expired, already consumed, or does not belong to session %q.", s.id), kwFind(t, again, "error").String("message"))
	})

	t.Run("stopped run", func(t *testing.T) {
		s := newKortyxSession(t, c, kwSlow)
		done := make(chan []kortyxwire.Chunk, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			chunks, err := c.Send(ctx, s.id, kwSlow, []kortyxwire.Message{{Role: "user", Content: "work"}})
			if err != nil {
				chunks = append(chunks, kortyxwire.Chunk{"type": "reader-error", "message": err.Error()})
			}
			done <- chunks
		}()
		eventually(t, 30*time.Second, "the run to be stoppable", func() bool {
			resp := post(t, base+"/api/chat/stop", map[string]any{"sessionId": s.id})
			defer resp.Body.Close()
			var body struct{ RunID string }
			return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&body) == nil && body.RunID != ""
		})
		out := <-done
		for _, ch := range out {
			require.NoError(t, kortyxwire.Check(ch), "%v", ch)
		}
		require.Equal(t, []string{"session", "structured-data…", "error", "done"}, kwTypes(out), "%v", out)
		f := kwFind(t, out, "error")["failure"].(map[string]any)
		require.Equal(t, "CANCELLED", f["code"])
	})
}

// Issue 12 items 1–3: Kortyx's own client rules (kortyxwire: its stream reader, route call,
// useChat answers and checkpoint calls) complete every scenario against the dev-mode stack.
func TestKortyxClientDevMode(t *testing.T) {
	_, addr := startKortyxStack(t, "")
	kortyxScenarios(t, "http://"+addr)
}

// The same against an --api-only process over Redis: the runs execute on a worker (the dev-mode
// stack of this test, on the same Redis and task queue), the chat and checkpoint requests go to
// the API process, which learns the checkpoints' sessions from the responses it streams.
func TestKortyxClientAPIOnlyOverRedis(t *testing.T) {
	redis := redistest.Start(t)
	tq, _ := startKortyxStack(t, redis.URL())
	api := startProgram(t, tq, []string{"--api-only"}, "KORTYX_REDIS_URL="+redis.URL(), "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_EXAMPLES=hello")
	addr := strings.TrimPrefix(logAttr(api.until(t, `msg="kortyx worker: HTTP API"`), "addr"), "http://")
	kortyxScenarios(t, "http://"+addr)
}
