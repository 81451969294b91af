package agui_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/agui"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/stretchr/testify/require"
)

// post sends a body and returns the response and its whole body.
func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

// input is a RunAgentInput of a prompt.
func input(thread, run, text string) string {
	return string(mustJSON(map[string]any{"threadId": thread, "runId": run, "state": map[string]any{}, "tools": []any{}, "context": []any{},
		"forwardedProps": map[string]any{}, "messages": []any{map[string]any{"id": "u-" + run, "role": "user", "content": text}}}))
}

// resume is a RunAgentInput that answers interrupt id.
func resume(thread, run, id, status string, payload any) string {
	entry := map[string]any{"interruptId": id, "status": status}
	if payload != nil {
		entry["payload"] = payload
	}
	return string(mustJSON(map[string]any{"threadId": thread, "runId": run, "messages": []any{}, "resume": []any{entry}}))
}

// events parses an SSE body of AG-UI events.
func events(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, block := range strings.Split(strings.TrimSpace(body), "\n\n") {
		data, ok := strings.CutPrefix(block, "data: ")
		require.True(t, ok, "an event without data: %q", block)
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &e), data)
		out = append(out, e)
	}
	return out
}

func types(es []map[string]any) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e["type"].(string))
	}
	return out
}

// code is the failure code of an error response's body.
func code(t *testing.T, body string) string {
	t.Helper()
	var b struct {
		Failure contracts.Failure `json:"failure"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &b), body)
	return string(b.Failure.Code)
}

// interruptOf is the first interrupt of a response's RUN_FINISHED.
func interruptOf(t *testing.T, es []map[string]any) map[string]any {
	t.Helper()
	last := es[len(es)-1]
	require.Equal(t, "RUN_FINISHED", last["type"])
	o := last["outcome"].(map[string]any)
	require.Equal(t, "interrupt", o["type"], "%v", last)
	return o["interrupts"].([]any)[0].(map[string]any)
}

// TestHTTP checks the route below the client: the framing, the same runId sent again, errors in
// the stream, a cancel, and the refusals of bad input (4xx, a Kortyx code, nothing started).
func TestHTTP(t *testing.T) {
	o, chosen := options(t)
	tq := taskQueue()
	st := testenv.Run(t, context.Background(), config(tq), o)
	base := "http://" + st.HTTPAddr + "/api/agui/"
	svc, err := sessions.New(sessions.Options{Client: st.Client})
	require.NoError(t, err)

	t.Run("same runId reads the same turn", func(t *testing.T) {
		thread := uuid.NewString()
		res, first := post(t, base+"hello", input(thread, "r1", "hi"))
		require.Equal(t, 200, res.StatusCode)
		require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
		es := events(t, first)
		require.Equal(t, map[string]any{"type": "RUN_STARTED", "threadId": thread, "runId": "r1"}, es[0])
		require.Equal(t, map[string]any{"type": "STEP_STARTED", "stepName": "greet"}, es[1])
		require.Equal(t, map[string]any{"type": "STEP_FINISHED", "stepName": "greet"}, es[2])
		q := interruptOf(t, es)
		require.Regexp(t, `^human-[^.]+\.[^.]+$`, q["id"])
		_, again := post(t, base+"hello", input(thread, "r1", "hi"))
		require.Equal(t, first, again)
		v, err := svc.View(context.Background(), thread)
		require.NoError(t, err)
		require.Len(t, v.Checkpoints, 2, "the session's start and one turn")
		require.Len(t, v.Pending, 1)

		// The same runId with another message is another turn's content: refused.
		res, body := post(t, base+"hello", input(thread, "r1", "hello?"))
		require.Equal(t, 409, res.StatusCode, body)
		require.Equal(t, string(contracts.CodeClientTurnConflict), code(t, body))

		// The answer's run, sent twice, runs once.
		res, answered := post(t, base+"hello", resume(thread, "r2", q["id"].(string), "resolved", "Ada"))
		require.Equal(t, 200, res.StatusCode, answered)
		es = events(t, answered)
		require.Equal(t, []string{"RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
			"STEP_FINISHED", "RUN_FINISHED"}, types(es))
		require.Equal(t, map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": "r2-1", "delta": "Hello, Ada!"}, es[3])
		require.Equal(t, map[string]any{"type": "success"}, es[6]["outcome"])
		_, again = post(t, base+"hello", resume(thread, "r2", q["id"].(string), "resolved", "Ada"))
		require.Equal(t, answered, again)
		v, err = svc.View(context.Background(), thread)
		require.NoError(t, err)
		require.Len(t, v.Checkpoints, 3, "one more turn")
	})

	t.Run("an answer the question refuses", func(t *testing.T) {
		thread := uuid.NewString()
		_, body := post(t, base+"hello", input(thread, "r1", "hi"))
		id := interruptOf(t, events(t, body))["id"].(string)
		res, body := post(t, base+"hello", resume(thread, "r2", id, "resolved", 42))
		require.Equal(t, 400, res.StatusCode, body)
		require.Equal(t, string(contracts.CodeInvalidResponse), code(t, body))
		res, body = post(t, base+"hello", resume(thread, "r3", id, "resolved", "Ada"))
		require.Equal(t, 200, res.StatusCode, body)
		require.Contains(t, body, `"delta":"Hello, Ada!"`, "the question stayed open")
	})

	t.Run("custom question", func(t *testing.T) {
		thread := uuid.NewString()
		_, body := post(t, base+aguiPlan, input(thread, "r1", "which plan?"))
		q := interruptOf(t, events(t, body))
		require.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"plan": map[string]any{"enum": []any{"basic", "pro"}}},
			"required": []any{"plan"}}, q["responseSchema"], "the schema the session keeps")
		require.Equal(t, map[string]any{"kind": "custom", "node": "n", "contract": "plan", "request": map[string]any{"choices": []any{"basic", "pro"}}}, q["metadata"])
		res, body := post(t, base+aguiPlan, resume(thread, "r2", q["id"].(string), "resolved", map[string]any{"plan": "gold"}))
		require.Equal(t, 400, res.StatusCode, body)
		require.Equal(t, string(contracts.CodeInvalidResponse), code(t, body))
		_, body = post(t, base+aguiPlan, resume(thread, "r3", q["id"].(string), "resolved", map[string]any{"plan": "pro"}))
		require.Contains(t, body, `"delta":"Plan: pro"`)
	})

	t.Run("keep-alive and the default agent", func(t *testing.T) {
		svc, err := sessions.New(sessions.Options{Client: st.Client, Broker: st.Broker, TaskQueue: tq})
		require.NoError(t, err)
		h, err := agui.New(svc, agui.Options{AllowUnauthenticated: true, DefaultAgent: aguiSlow, KeepAlive: 20 * time.Millisecond})
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		defer srv.Close()
		thread := uuid.NewString()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(input(thread, "r1", "start")))
		require.NoError(t, err)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var got strings.Builder
		buf := make([]byte, 4096)
		for !strings.Contains(got.String(), ": keep-alive\n\n") {
			n, err := res.Body.Read(buf)
			require.NoError(t, err, got.String())
			got.Write(buf[:n])
		}
		require.Contains(t, got.String(), `"type":"STATE_SNAPSHOT"`, "the default agent runs")
		v, err := svc.View(context.Background(), thread)
		require.NoError(t, err)
		require.NotNil(t, v.Active)
		require.NoError(t, st.Client.SignalWorkflow(context.Background(), v.Active.RunID, "", goSignal, nil))
		rest, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Contains(t, string(rest), `"delta":"Finished."`)
	})

	t.Run("approval denied", func(t *testing.T) {
		before := chosen.Store.Refunds()
		thread := uuid.NewString()
		_, body := post(t, base+"support", input(thread, "r1", "Refund A-1003 please"))
		q := interruptOf(t, events(t, body))
		require.Equal(t, "tool_approval", q["reason"])
		require.Equal(t, map[string]any{"properties": map[string]any{"approved": map[string]any{"type": "boolean"}}, "required": []any{"approved"},
			"type": "object"}, q["responseSchema"])
		res, body := post(t, base+"support", resume(thread, "r2", q["id"].(string), "resolved", map[string]any{"approved": false}))
		require.Equal(t, 200, res.StatusCode, body)
		es := events(t, body)
		require.Equal(t, seq("RUN_STARTED", "STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
			"TEXT_MESSAGE_START", n(11, "TEXT_MESSAGE_CONTENT"), "TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"), types(es))
		require.Equal(t, map[string]any{"type": "TOOL_CALL_RESULT", "messageId": "r2-1", "toolCallId": q["toolCallId"], "role": "tool",
			"content": "Tool call denied by user."}, es[5])
		require.Equal(t, before, chosen.Store.Refunds(), "the refund never ran")
	})

	t.Run("busy", func(t *testing.T) {
		thread := uuid.NewString()
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+aguiSlow, strings.NewReader(input(thread, "r1", "start")))
		require.NoError(t, err)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, 200, res.StatusCode)
		// Another prompt while the turn runs is refused.
		res2, body := post(t, base+aguiSlow, input(thread, "r2", "again"))
		require.Equal(t, 409, res2.StatusCode, body)
		require.Equal(t, string(contracts.CodeSessionBusy), code(t, body))
		cancel()
		res.Body.Close()
		v, err := svc.View(context.Background(), thread)
		require.NoError(t, err)
		require.NotNil(t, v.Active)
		require.NoError(t, st.Client.SignalWorkflow(context.Background(), v.Active.RunID, "", goSignal, nil))
	})

	t.Run("cancel", func(t *testing.T) {
		thread := uuid.NewString()
		_, body := post(t, base+"hello", input(thread, "r1", "hi"))
		q := interruptOf(t, events(t, body))
		res, body := post(t, base+"hello", resume(thread, "r2", q["id"].(string), "cancelled", nil))
		require.Equal(t, 200, res.StatusCode, body)
		es := events(t, body)
		require.Equal(t, []string{"RUN_STARTED", "RUN_FINISHED"}, types(es))
		require.Equal(t, map[string]any{"type": "cancelled"}, es[1]["outcome"])
	})

	t.Run("error in the stream", func(t *testing.T) {
		res, body := post(t, base+aguiBoom, input(uuid.NewString(), "r1", "go"))
		require.Equal(t, 200, res.StatusCode)
		es := events(t, body)
		require.Equal(t, []string{"RUN_STARTED", "RUN_ERROR"}, types(es))
		require.Equal(t, map[string]any{"type": "RUN_ERROR", "code": "INVALID_INPUT", "message": `aguiboom refuses "go"`}, es[1])
	})

	t.Run("refusals", func(t *testing.T) {
		thread := uuid.NewString()
		big := input(thread, "r1", strings.Repeat("x", 1<<20))
		for _, tc := range []struct {
			name, path, body string
			status           int
			code             contracts.Code
		}{
			{"malformed JSON", "hello", `{"threadId":`, 400, contracts.CodeInvalidRequest},
			{"not an object", "hello", `[]`, 400, contracts.CodeInvalidRequest},
			{"field of the wrong type", "hello", `{"threadId":1,"runId":"r1","messages":[]}`, 400, contracts.CodeInvalidRequest},
			{"no threadId", "hello", `{"runId":"r1","messages":[{"id":"m","role":"user","content":"hi"}]}`, 400, contracts.CodeInvalidRequest},
			{"no runId", "hello", `{"threadId":"` + thread + `","messages":[{"id":"m","role":"user","content":"hi"}]}`, 400, contracts.CodeInvalidRequest},
			{"runId too long", "hello", input(thread, strings.Repeat("r", 129), "hi"), 400, contracts.CodeInvalidRequest},
			{"no messages", "hello", `{"threadId":"` + thread + `","runId":"r1"}`, 400, contracts.CodeInvalidRequest},
			{"no user message", "hello", `{"threadId":"` + thread + `","runId":"r1","messages":[{"id":"a","role":"assistant","content":"hi"}]}`, 400, contracts.CodeInvalidRequest},
			{"bad thread id", "hello", input("a b", "r1", "hi"), 400, contracts.CodeInvalidSession},
			{"unknown agent", "nope", input(thread, "r1", "hi"), 404, contracts.CodeUnknownWorkflow},
			{"oversized body", "hello", big, 400, contracts.CodeInvalidRequest},
			{"resume of no interrupt of ours", "hello", resume(thread, "r1", "forged", "resolved", "x"), 400, contracts.CodeInvalidResume},
			{"resume with a wrong token", "hello", resume(thread, "r1", "human-1.forged", "resolved", "x"), 400, contracts.CodeInvalidResume},
			{"resume with a bad status", "hello", resume(thread, "r1", "human-1.forged", "done", "x"), 400, contracts.CodeInvalidRequest},
			{"resume with two entries", "hello", `{"threadId":"` + thread + `","runId":"r1","messages":[],"resume":[{"interruptId":"human-1.a","status":"cancelled"},{"interruptId":"human-2.b","status":"cancelled"}]}`, 400, contracts.CodeInvalidRequest},
		} {
			res, body := post(t, base+tc.path, tc.body)
			require.Equal(t, tc.status, res.StatusCode, "%s: %s", tc.name, body)
			require.Equal(t, "application/json", res.Header.Get("Content-Type"), tc.name)
			require.Equal(t, string(tc.code), code(t, body), tc.name)
		}
		// Nothing ran in the thread: no turn, no checkpoint.
		v, err := svc.View(context.Background(), thread)
		if err == nil {
			require.Nil(t, v.Active)
			require.LessOrEqual(t, len(v.Checkpoints), 1, "no turn committed")
			require.Empty(t, v.Pending)
		}
		res, body := post(t, strings.TrimSuffix(base, "/"), input(thread, "r1", "hi"))
		require.Equal(t, 404, res.StatusCode, body)
	})
}

// TestFirstAnswerWins: a question asked over AG-UI and answered through the session service
// (as any other wire answers it) is not answered again by a resume: the resume is refused and
// the answer that counted is the first.
func TestFirstAnswerWins(t *testing.T) {
	o, _ := options(t)
	st := testenv.Run(t, context.Background(), config(taskQueue()), o)
	base := "http://" + st.HTTPAddr + "/api/agui/"
	svc, err := sessions.New(sessions.Options{Client: st.Client, Broker: st.Broker})
	require.NoError(t, err)
	ctx := context.Background()

	thread := uuid.NewString()
	_, body := post(t, base+"hello", input(thread, "r1", "hi"))
	id := interruptOf(t, events(t, body))["id"].(string)
	requestID, token, _ := strings.Cut(id, ".")

	// Another wire answers first: the session's answer turn.
	ts, err := svc.Answer(ctx, thread, contracts.Response{Token: token, RequestID: requestID, Text: "Grace"}, sessions.AnswerOptions{ClientTurnID: "chat-1"})
	require.NoError(t, err)
	rd, err := svc.Follow(ctx, thread, ts, ts.Begin, sessions.FollowOptions{Answered: token, Started: true})
	require.NoError(t, err)
	var got []string
	for {
		e, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if e.Chunk.Type == contracts.ChunkMessage {
			got = append(got, e.Chunk.Content)
		}
	}
	require.Equal(t, []string{"Hello, Grace!"}, got)

	// The resume of the same question over AG-UI is refused before anything runs.
	res, body := post(t, base+"hello", resume(thread, "r2", id, "resolved", "Ada"))
	require.Equal(t, 400, res.StatusCode, body)
	require.Equal(t, string(contracts.CodeInvalidResume), code(t, body))
	v, err := svc.View(ctx, thread)
	require.NoError(t, err)
	require.Len(t, v.Checkpoints, 3, "the session's start, the question's turn and the first answer's")
	require.Nil(t, v.Active)

	// The other way round: answered over AG-UI, the question is gone for the other wires.
	thread = uuid.NewString()
	_, body = post(t, base+"hello", input(thread, "r1", "hi"))
	id = interruptOf(t, events(t, body))["id"].(string)
	requestID, token, _ = strings.Cut(id, ".")
	res, body = post(t, base+"hello", resume(thread, "r2", id, "resolved", "Ada"))
	require.Equal(t, 200, res.StatusCode, body)
	_, err = svc.Answer(ctx, thread, contracts.Response{Token: token, RequestID: requestID, Text: "Grace"}, sessions.AnswerOptions{ClientTurnID: "chat-1"})
	require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(err), "%v", err)

	// Two resumes of one question at once, under two runIds: one runs it, the other is refused.
	thread = uuid.NewString()
	_, body = post(t, base+"hello", input(thread, "r1", "hi"))
	id = interruptOf(t, events(t, body))["id"].(string)
	type answer struct {
		status int
		body   string
	}
	answers := make(chan answer, 2)
	for _, run := range []string{"ra", "rb"} {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"hello", strings.NewReader(resume(thread, run, id, "resolved", "name "+run)))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{body: err.Error()}
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			answers <- answer{status: res.StatusCode, body: string(b)}
		}()
	}
	a, b := <-answers, <-answers
	if a.status != 200 {
		a, b = b, a
	}
	require.Equal(t, 200, a.status, a.body)
	require.Regexp(t, `"delta":"Hello, name r[ab]!"`, a.body)
	require.Contains(t, []int{400, 409}, b.status, b.body)
	require.Contains(t, []string{string(contracts.CodeInvalidResume), string(contracts.CodeSessionBusy)}, code(t, b.body))
	v, err = svc.View(ctx, thread)
	require.NoError(t, err)
	require.Len(t, v.Checkpoints, 3, "one answer ran")
}

// TestAuthorize: New refuses a handler without Authorize (unless AllowUnauthenticated), and the
// hook sees what each request does before any work.
func TestAuthorize(t *testing.T) {
	noBroker, err := sessions.New(sessions.Options{Client: env.Client})
	require.NoError(t, err)
	_, err = agui.New(noBroker, agui.Options{AllowUnauthenticated: true})
	require.ErrorContains(t, err, "the session service has no broker")
	svc, err := sessions.New(sessions.Options{Client: env.Client, Broker: stream.NewMemory(stream.MemoryOptions{})})
	require.NoError(t, err)
	_, err = agui.New(svc, agui.Options{})
	require.ErrorContains(t, err, "Options.Authorize is required")
	_, err = agui.New(nil, agui.Options{AllowUnauthenticated: true})
	require.ErrorContains(t, err, "session service is required")
	var seen []sessions.Access
	refuse := error(&contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in first."})
	h, err := agui.New(svc, agui.Options{Authorize: func(r *http.Request, a sessions.Access) error {
		seen = append(seen, a)
		return refuse
	}})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/agui/{agent}", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, body := post(t, srv.URL+"/agui/hello", input("t1", "r1", "hi"))
	require.Equal(t, 401, res.StatusCode)
	require.Equal(t, string(contracts.CodeUnauthorized), code(t, body))
	refuse = errors.New("not yours")
	res, body = post(t, srv.URL+"/agui/hello", resume("t1", "r2", "human-1.t", "resolved", "Ada"))
	require.Equal(t, 403, res.StatusCode)
	require.Equal(t, string(contracts.CodeForbidden), code(t, body))
	require.Equal(t, []sessions.Access{{Wire: "agui", Action: sessions.ActionStart, SessionID: "t1", Workflow: "hello"},
		{Wire: "agui", Action: sessions.ActionAnswer, SessionID: "t1"}}, seen)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/agui/hello", nil)
	require.NoError(t, err)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 405, res.StatusCode)
}

// With CORS origins (the dev API passes app.Config.CORSOrigins), a browser app on an allowed
// origin may call the route: the preflight is answered; a page of another origin is refused.
func TestCORS(t *testing.T) {
	o, _ := options(t)
	cfg := config(taskQueue())
	cfg.CORSOrigins = []string{"http://app.example:*"}
	st := testenv.Run(t, context.Background(), cfg, o)
	preflight := func(origin string) *http.Response {
		req, err := http.NewRequest(http.MethodOptions, "http://"+st.HTTPAddr+"/api/agui/hello", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	res := preflight("http://app.example:3000")
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	require.Equal(t, "http://app.example:3000", res.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "POST, OPTIONS", res.Header.Get("Access-Control-Allow-Methods"))
	require.Equal(t, http.StatusForbidden, preflight("http://evil.example").StatusCode)
}

// TestReattachOnAnotherProcess: a run's connection to one API process drops mid-stream; the
// same RunAgentInput sent to a second API process, over the same Redis, reads the same turn
// from its beginning while it still waits, and the turn runs once.
func TestReattachOnAnotherProcess(t *testing.T) {
	rs := redistest.Start(t)
	o, _ := options(t)
	tq := taskQueue()
	worker := config(tq)
	worker.HTTPAddr, worker.RedisURL = "", rs.URL()
	st := testenv.Run(t, context.Background(), worker, o)
	apiOnly := o
	apiOnly.APIOnly = true
	api := config(tq)
	api.RedisURL = rs.URL()
	api1 := testenv.Run(t, context.Background(), api, apiOnly)
	api2 := testenv.Run(t, context.Background(), api, apiOnly)
	require.NotEqual(t, api1.HTTPAddr, api2.HTTPAddr)
	before := slowRuns.Load()
	thread := uuid.NewString()
	body := input(thread, "r1", "start")

	// readUntil reads a response until it holds want.
	readUntil := func(res *http.Response, got *strings.Builder, want string) {
		buf := make([]byte, 4096)
		for !strings.Contains(got.String(), want) {
			n, err := res.Body.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				require.Contains(t, got.String(), want, "%v", err)
			}
		}
	}
	open := func(addr string) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/agui/"+aguiSlow, strings.NewReader(body))
		require.NoError(t, err)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, 200, res.StatusCode)
		return res, cancel
	}
	res, cancel := open(api1.HTTPAddr)
	var first strings.Builder
	readUntil(res, &first, `"type":"STATE_SNAPSHOT"`)
	cancel() // the connection drops
	res.Body.Close()

	res, cancel = open(api2.HTTPAddr)
	defer cancel()
	defer res.Body.Close()
	var again strings.Builder
	readUntil(res, &again, `"type":"STATE_SNAPSHOT"`)
	require.Equal(t, first.String(), again.String(), "the same events from the beginning")
	svc, err := sessions.New(sessions.Options{Client: st.Client})
	require.NoError(t, err)
	v, err := svc.View(context.Background(), thread)
	require.NoError(t, err)
	require.NotNil(t, v.Active)
	require.NoError(t, st.Client.SignalWorkflow(context.Background(), v.Active.RunID, "", goSignal, nil))
	rest, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	es := events(t, again.String()+string(rest))
	require.Equal(t, []string{"RUN_STARTED", "STEP_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
		"TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"}, types(es))
	require.Equal(t, before+1, slowRuns.Load(), "the turn ran once")
}
