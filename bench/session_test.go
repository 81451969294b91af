package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/kortyx-go/kortyx/sessions"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/redisstream"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// sessionTurn are the two latencies of one session turn with a question: prompt → the first
// chunk of its response (the question), answer → the first chunk after it.
type sessionTurn struct{ prompt, answer time.Duration }

// BenchmarkSessionTurn: a session's turn through the chat route (a new session each
// iteration: the prompt, whose response asks a question, then the answer), beside the
// hand-written workflow doing the same turn through the Temporal client (start; the question
// published by a local activity; the answer by update; the next chunk published). Reported: ms
// from the prompt to its response's first chunk, and from the answer to the next chunk, each
// side by side. The Kortyx side reads the chunks through HTTP (SSE on loopback), the plain side
// from the broker directly. Twice: over the in-memory broker of one process (the shared
// worker's; the chat route's reader asks the session once whether a turn whose stream was
// empty moved on, docs/architecture.md), and over Redis (a real redis-server, as several
// processes run: the reader asks nothing), each with a worker publishing there.
func BenchmarkSessionTurn(b *testing.B) {
	e := setup(b)
	memory := turnStack{queue: e.queue, broker: e.broker}
	redisStack, err := e.redisTurnStack(b)
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range []struct {
		name string
		s    turnStack
	}{{"", memory}, {"-redis", redisStack}} {
		svc, err := sessions.New(sessions.Options{Client: e.c, Broker: st.s.broker, TaskQueue: st.s.queue})
		if err != nil {
			b.Fatal(err)
		}
		h, err := chat.NewHandler(svc, chat.Options{AllowUnauthenticated: true})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		var k, p [2]samples
		b.Run("kortyx"+st.name, func(b *testing.B) {
			t := measureTurns(b, func(ctx context.Context) (sessionTurn, error) { return e.kortyxSessionTurn(ctx, srv.URL) })
			k[0].add(b.N, ms(t.prompt)/float64(b.N))
			k[1].add(b.N, ms(t.answer)/float64(b.N))
		})
		b.Run("plain"+st.name, func(b *testing.B) {
			t := measureTurns(b, func(ctx context.Context) (sessionTurn, error) { return e.plainSessionTurn(ctx, st.s) })
			p[0].add(b.N, ms(t.prompt)/float64(b.N))
			p[1].add(b.N, ms(t.answer)/float64(b.N))
		})
		for i, what := range []string{"prompt→first chunk", "answer→next chunk"} {
			if km, pm := k[i].mean(), p[i].mean(); km > 0 && pm > 0 {
				fmt.Printf("Ratio %s%s %s kortyx/plain=%.2f (kortyx %.3f ms, plain %.3f ms; mean of %d and %d repetitions)\n",
					b.Name(), st.name, what, km/pm, km, pm, k[i].n(), p[i].n())
			}
		}
	}
}

// turnStack is where a session turn's run executes and publishes: a task queue polled by a
// worker with the benchmark's definitions, and the broker its activities publish to.
type turnStack struct {
	queue  string
	broker stream.Broker
}

// redisTurnStack starts a redis-server, and a worker publishing to it on a task queue of its own.
func (e *env) redisTurnStack(b *testing.B) (turnStack, error) {
	srv := redistest.Start(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	broker, err := redisstream.New(ctx, redisstream.Options{URL: srv.URL()})
	if err != nil {
		return turnStack{}, err
	}
	queue, err := e.startTurnWorker(e.c, "redis", broker)
	if err != nil {
		return turnStack{}, err
	}
	return turnStack{queue: queue, broker: broker}, nil
}

// startTurnWorker starts a worker on client c with the benchmark's definitions and the plain
// workflows, publishing to broker, on a new task queue named after name, and returns the queue.
func (e *env) startTurnWorker(c client.Client, name string, broker stream.Broker) (string, error) {
	reg := workflows.NewRegistry()
	if err := reg.Add(definitions()...); err != nil {
		return "", err
	}
	queue := e.id("kortyx-bench-" + name)
	o := worker.Options{}
	activities.WorkerOptions(&o)
	w := worker.New(c, queue, o)
	workflows.NewRunner(reg).Register(w)
	(&activities.Activities{Stream: broker}).Register(w)
	registerPlain(w, broker)
	if err := w.Start(); err != nil {
		return "", err
	}
	e.cleanups = append(e.cleanups, w.Stop)
	return queue, nil
}

// measureTurns runs b.N turns and reports their mean latencies; it returns the sums.
func measureTurns(b *testing.B, turn func(context.Context) (sessionTurn, error)) sessionTurn {
	var sum sessionTurn
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), iterationTimeout)
		t, err := turn(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		sum.prompt += t.prompt
		sum.answer += t.answer
	}
	b.ReportMetric(ms(sum.prompt)/float64(b.N), "ms/prompt-first-chunk")
	b.ReportMetric(ms(sum.answer)/float64(b.N), "ms/answer-next-chunk")
	return sum
}

// kortyxSessionTurn runs one turn of a new session through the chat route at base.
func (e *env) kortyxSessionTurn(ctx context.Context, base string) (sessionTurn, error) {
	var t sessionTurn
	session := e.id("session")
	body := map[string]any{"sessionId": session, "workflowId": kortyxInterrupt, "messages": []map[string]any{{"role": "user", "content": "go"}}}
	start := time.Now()
	first, chunks, err := chatTurn(ctx, base, body)
	if err != nil {
		return t, err
	}
	t.prompt = first.Sub(start)
	var ask contracts.Chunk
	for _, c := range chunks {
		if c.Type == contracts.ChunkInterrupt {
			ask = c
		}
	}
	if ask.ResumeToken == "" {
		return t, fmt.Errorf("no question in %v", chunks)
	}
	answer := map[string]any{"sessionId": session, "messages": []map[string]any{{"role": "user", "content": "yes",
		"metadata": map[string]any{"resume": map[string]any{"token": ask.ResumeToken, "requestId": ask.RequestID}}}}}
	start = time.Now()
	first, chunks, err = chatTurn(ctx, base, answer)
	if err != nil {
		return t, err
	}
	t.answer = first.Sub(start)
	if chunks[0].Type != contracts.ChunkStructuredData {
		return t, fmt.Errorf("the answer's response starts with %s", chunks[0].Type)
	}
	return t, nil
}

// chatTurn posts a chat request and reads its response to the end: the time its first chunk
// after the session chunk arrived, and the chunks.
func chatTurn(ctx context.Context, base string, body any) (time.Time, []contracts.Chunk, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return time.Time{}, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/chat", bytes.NewReader(b))
	if err != nil {
		return time.Time{}, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpwire.ResumableHeader, "0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return time.Time{}, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return time.Time{}, nil, fmt.Errorf("chat: HTTP %d", resp.StatusCode)
	}
	var first time.Time
	var chunks []contracts.Chunk
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c contracts.Chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return first, chunks, err
		}
		if c.Type == contracts.ChunkSession {
			continue
		}
		if first.IsZero() {
			first = time.Now()
		}
		chunks = append(chunks, c)
	}
	if len(chunks) == 0 {
		return first, nil, fmt.Errorf("chat: an empty response")
	}
	return first, chunks, sc.Err()
}

// plainSessionTurn runs the hand-written turn on st: the workflow started by the client, its
// question read from the broker, the answer sent by update, the next chunk read from the broker.
func (e *env) plainSessionTurn(ctx context.Context, st turnStack) (sessionTurn, error) {
	var t sessionTurn
	id := e.id("p-session")
	start := time.Now()
	run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: st.queue}, plainInterrupt)
	if err != nil {
		return t, err
	}
	q, err := waitChunkOn(ctx, st.broker, id, 0, isType(contracts.ChunkInterrupt))
	if err != nil {
		return t, err
	}
	t.prompt = time.Since(start)
	start = time.Now()
	h, err := e.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: answerName, Args: []any{"yes"},
		WaitForStage: client.WorkflowUpdateStageAccepted})
	if err != nil {
		return t, err
	}
	if _, err := waitChunkOn(ctx, st.broker, id, q.Offset, func(contracts.Chunk) bool { return true }); err != nil {
		return t, err
	}
	t.answer = time.Since(start)
	var ok string
	if err := h.Get(ctx, &ok); err != nil {
		return t, err
	}
	return t, run.Get(ctx, nil)
}
