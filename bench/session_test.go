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

	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"go.temporal.io/sdk/client"
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
// from the broker directly.
func BenchmarkSessionTurn(b *testing.B) {
	e := setup(b)
	svc, err := sessions.New(sessions.Options{Client: e.c, Broker: e.broker, TaskQueue: e.queue})
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
	b.Run("kortyx", func(b *testing.B) {
		t := measureTurns(b, func(ctx context.Context) (sessionTurn, error) { return e.kortyxSessionTurn(ctx, srv.URL) })
		k[0].add(b.N, ms(t.prompt)/float64(b.N))
		k[1].add(b.N, ms(t.answer)/float64(b.N))
	})
	b.Run("plain", func(b *testing.B) {
		t := measureTurns(b, e.plainSessionTurn)
		p[0].add(b.N, ms(t.prompt)/float64(b.N))
		p[1].add(b.N, ms(t.answer)/float64(b.N))
	})
	for i, what := range []string{"prompt→first chunk", "answer→next chunk"} {
		if km, pm := k[i].mean(), p[i].mean(); km > 0 && pm > 0 {
			fmt.Printf("Ratio %s %s kortyx/plain=%.2f (kortyx %.3f ms, plain %.3f ms; mean of %d and %d repetitions)\n",
				b.Name(), what, km/pm, km, pm, k[i].n(), p[i].n())
		}
	}
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

// plainSessionTurn runs the hand-written turn: the workflow started by the client, its question
// read from the broker, the answer sent by update, the next chunk read from the broker.
func (e *env) plainSessionTurn(ctx context.Context) (sessionTurn, error) {
	var t sessionTurn
	id := e.id("p-session")
	start := time.Now()
	run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.queue}, plainInterrupt)
	if err != nil {
		return t, err
	}
	q, err := e.waitChunk(ctx, id, 0, isType(contracts.ChunkInterrupt))
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
	if _, err := e.waitChunk(ctx, id, q.Offset, func(contracts.Chunk) bool { return true }); err != nil {
		return t, err
	}
	t.answer = time.Since(start)
	var ok string
	if err := h.Get(ctx, &ok); err != nil {
		return t, err
	}
	return t, run.Get(ctx, nil)
}
