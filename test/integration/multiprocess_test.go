package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream/sseclient"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
)

// The multi-process tests (issue 11 items 3 and 4): the real worker program, several processes
// of it over one real redis-server (append-only file on) and the package's dev server. The
// models are the examples' scripted ones, so every chunk sequence is exact.

// startProcess is startProgram for the multi-process tests: the process lives until the test
// ends (or is killed), and its log is kept only as far as a test reads it.
func startProcess(t *testing.T, tq string, args []string, env ...string) *program {
	t.Helper()
	return startBinary(t, binary(t, "worker"), tq, args, env...)
}

// startBinary is startProcess with a worker binary of the test's own (another build).
func startBinary(t *testing.T, bin, tq string, args []string, env ...string) *program {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+tq, "KORTYX_HTTP_ADDR=",
		"KORTYX_HEALTH_ADDR=", "KORTYX_REDIS_URL=", "KORTYX_WORKFLOWS=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "KORTYX_MCP_SERVERS=",
		"KORTYX_LOG_FORMAT=", "KORTYX_LOG_LEVEL=", "KORTYX_EXAMPLES=", "KORTYX_WORKER_POLL=", "KORTYX_WORKER_IDENTITY="), env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p := &program{cmd: cmd, lines: make(chan string, 10000)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default: // the test reads no more of the log
			}
		}
		close(p.lines)
	}()
	return p
}

// apiURL waits for the program's HTTP API line and returns its base URL.
func (p *program) apiURL(t *testing.T) string {
	t.Helper()
	return logAttr(p.until(t, `msg="kortyx worker: HTTP API"`), "addr")
}

// cluster is a set of worker program processes over one Redis and the package's dev server.
type cluster struct {
	redis   *redistest.Server
	tq      string
	workers map[string]*program // by identity
	apis    []string            // base URLs of the --api-only processes
}

// proc is how a worker process is started: its arguments and extra environment.
type proc struct{ args, env []string }

// startCluster starts the workers (by identity) and n --api-only processes, all with
// KORTYX_REDIS_URL, and waits until each polls or serves.
func startCluster(t *testing.T, redis *redistest.Server, workers map[string]proc, n int) *cluster {
	t.Helper()
	c := &cluster{redis: redis, tq: taskQueue(t), workers: map[string]*program{}}
	for id, p := range workers {
		env := append([]string{"KORTYX_REDIS_URL=" + redis.URL(), "KORTYX_WORKER_IDENTITY=" + id}, p.env...)
		c.workers[id] = startProcess(t, c.tq, p.args, env...)
	}
	var apis []*program
	for range n {
		apis = append(apis, startProcess(t, c.tq, []string{"--api-only"}, "KORTYX_REDIS_URL="+redis.URL(), "KORTYX_HTTP_ADDR=127.0.0.1:0"))
	}
	for _, w := range c.workers {
		w.until(t, `msg="kortyx worker: polling task queue"`)
	}
	for _, a := range apis {
		c.apis = append(c.apis, a.apiURL(t))
	}
	return c
}

// goT is the require.TestingT of one of the concurrent chats: it collects the failures, and
// FailNow ends the chat's goroutine.
type goT struct{ errs []string }

func (g *goT) Errorf(format string, args ...any) {
	g.errs = append(g.errs, fmt.Sprintf(format, args...))
}
func (g *goT) FailNow() { runtime.Goexit() }

// concurrently runs fn(i) for i in [0, n) in n goroutines and reports their failures on t.
func concurrently(t *testing.T, n int, fn func(g *goT, i int)) {
	t.Helper()
	gs := make([]*goT, n)
	var wg sync.WaitGroup
	for i := range n {
		gs[i] = &goT{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(gs[i], i)
		}()
	}
	wg.Wait()
	for i, g := range gs {
		for _, e := range g.errs {
			t.Errorf("#%d: %s", i, e)
		}
	}
}

var mpHTTP = &http.Client{Timeout: 90 * time.Second}

// mpPost posts a JSON body to url with headers "Key: value" and reads the whole answer.
func mpPost(g require.TestingT, url string, body any, headers ...string) sseResponse {
	b, err := json.Marshal(body)
	require.NoError(g, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	require.NoError(g, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpwire.ResumableHeader, "1") // these tests read offsets: the resumable framing
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := mpHTTP.Do(req)
	require.NoError(g, err)
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	require.NoError(g, err)
	events, perr := parseSSE(resp.Header, string(data))
	return sseResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(data), Events: events, ParseErr: perr}
}

// mpChat posts a chat request to the API process at base.
func mpChat(g require.TestingT, base string, body any, headers ...string) sseResponse {
	return mpPost(g, base+"/api/chat", body, headers...)
}

// mpCheckpoints posts a checkpoint route request and decodes its 200 answer into out.
func mpCheckpoints(g require.TestingT, base string, body, out any) {
	r := mpPost(g, base+"/api/checkpoints", body)
	require.Equal(g, http.StatusOK, r.Status, r.Body)
	require.NoError(g, json.Unmarshal(fromKortyx([]byte(r.Body)), out), r.Body)
}

// exactly checks a chat response read to its end: 200, the session chunk (no id), then chunks
// whose SSE ids are after+1, after+2, … with no gap and no repeat (after < 0: from any first
// id), their types the wanted ones (the session chunk's included), then [DONE]. It returns
// the run's chunks and the last id.
func exactly(g require.TestingT, r sseResponse, after int64, want ...string) ([]contracts.Chunk, int64) {
	require.Equal(g, http.StatusOK, r.Status, r.Body)
	require.NoError(g, r.ParseErr, r.Body)
	n := len(r.Events)
	require.GreaterOrEqual(g, n, 2, r.Body)
	require.Equal(g, "[DONE]", r.Events[n-1].Data, r.Body)
	var got []string
	var chunks []contracts.Chunk
	for i, ev := range r.Events[:n-1] {
		var c contracts.Chunk
		require.NoError(g, json.Unmarshal([]byte(ev.Data), &c), ev.Data)
		got = append(got, string(c.Type))
		if i == 0 {
			require.Equal(g, contracts.ChunkSession, c.Type, r.Body)
			require.Empty(g, ev.ID, "the session chunk is not part of the run's stream")
			continue
		}
		id, err := strconv.ParseInt(ev.ID, 10, 64)
		require.NoError(g, err, "event %d (%s) has no id: %s", i, c.Type, r.Body)
		if after < 0 {
			after = id - 1
		}
		require.Equal(g, after+1, id, "the ids follow each other: %s", r.Body)
		after = id
		chunks = append(chunks, c)
	}
	require.Equal(g, want, got, r.Body)
	return chunks, after
}

func firstOf(g require.TestingT, chunks []contracts.Chunk, typ contracts.ChunkType) contracts.Chunk {
	for _, c := range chunks {
		if c.Type == typ {
			return c
		}
	}
	require.Failf(g, "no chunk", "no %s in %v", typ, chunks)
	return contracts.Chunk{}
}

// The exact responses of the chats the tests run.
var (
	// support, "Where is my order A-1002?": a lookup, then the scripted model's answer, one
	// text delta per word.
	orderTurn = []string{"session", "tool-call-start", "tool-call-result", "text-start",
		"text-delta", "text-delta", "text-delta", "text-delta", "text-delta", "text-delta", "text-end", "checkpoint", "done"}
	orderText = "Order A-1002 (coffee grinder) is shipped."
	// support, "Please refund order A-…": a lookup, then the refund's approval question.
	refundAsk = []string{"session", "tool-call-start", "tool-call-result", "interrupt", "checkpoint", "done"}
	// research, "AI agents": three children's progress, the risks child's question.
	researchAsk    = []string{"session", "structured-data", "structured-data", "structured-data", "interrupt", "checkpoint", "done"}
	researchAnswer = []string{"session", "message", "structured-data", "checkpoint", "done"}
	// hello: the name question, then the greeting.
	helloAsk    = []string{"session", "interrupt", "checkpoint", "done"}
	helloAnswer = []string{"session", "message", "checkpoint", "done"}
)

// refundAnswer is the response to the approval: denied, the refund tool does not run and the
// model says so; approved, it runs.
func refundAnswer(approve bool) []string {
	words := 11 // the deltas of the answers checked by text
	if approve {
		words = 8
	}
	out := []string{"session", "tool-call-start", "tool-call-result", "text-start"}
	for range words {
		out = append(out, "text-delta")
	}
	return append(out, "text-end", "checkpoint", "done")
}

// chatOrder runs the text chat in session through base.
func chatOrder(g require.TestingT, base, session string) {
	chunks, _ := exactly(g, mpChat(g, base, prompt(session, "t1", support.WorkflowID, "Where is my order A-1002?")), 0, orderTurn...)
	require.Equal(g, orderText, sessions.Buffer(chunks).Text)
}

// askRefund runs the first turn of a refund chat and returns its question and the id of its done.
func askRefund(g require.TestingT, base, session, order string) (contracts.Chunk, int64) {
	chunks, last := exactly(g, mpChat(g, base, prompt(session, "t1", support.WorkflowID, "Please refund order "+order)), 0, refundAsk...)
	ask := firstOf(g, chunks, contracts.ChunkInterrupt)
	require.True(g, strings.HasPrefix(ask.ID, "tool:call-refund-"), ask.ID) // the fake provider numbers calls per process
	return ask, last
}

// answerRefund answers the approval question through base; the response follows the question's
// done (after).
func answerRefund(g require.TestingT, base, session, order string, ask contracts.Chunk, after int64, approve bool) {
	choice, want := "deny", refusedText(order)
	if approve {
		choice, want = "approve", "Done: order "+order+" is refunded (R-5001, full amount)."
	}
	chunks, _ := exactly(g, mpChat(g, base, resumeBody(session, "t2", ask, "", map[string]any{"selected": choice})), after, refundAnswer(approve)...)
	require.Equal(g, want, sessions.Buffer(chunks).Text)
}

func refusedText(order string) string {
	return "I have not refunded order " + order + ": Tool call denied by user."
}

const risksText = "risks: failures come from unclear ownership and unchecked automation. (9 sources)"

func askResearch(g require.TestingT, base, session string) (contracts.Chunk, int64) {
	chunks, last := exactly(g, mpChat(g, base, prompt(session, "t1", research.WorkflowID, "AI agents")), 0, researchAsk...)
	ask := firstOf(g, chunks, contracts.ChunkInterrupt)
	require.Equal(g, research.TopicWorkflowID, ask.Workflow)
	return ask, last
}

func answerResearch(g require.TestingT, base, session string, ask contracts.Chunk, after int64) {
	chunks, _ := exactly(g, mpChat(g, base, resumeBody(session, "t2", ask, "", map[string]any{"selected": "no"})), after, researchAnswer...)
	require.Contains(g, sessions.Buffer(chunks).Text, risksText)
}

func askHello(g require.TestingT, base, session string) (contracts.Chunk, contracts.Chunk, int64) {
	chunks, last := exactly(g, mpChat(g, base, prompt(session, "t1", "hello", "hi")), 0, helloAsk...)
	return firstOf(g, chunks, contracts.ChunkInterrupt), firstOf(g, chunks, contracts.ChunkCheckpoint), last
}

func answerHello(g require.TestingT, base, session, turn string, ask contracts.Chunk, after int64, name string) {
	chunks, _ := exactly(g, mpChat(g, base, resumeBody(session, turn, ask, name, nil)), after, helloAnswer...)
	require.Equal(g, "Hello, "+name+"!", sessions.Buffer(chunks).Text)
}

// chatRollbackFork: hello answered, rolled back to its first checkpoint and answered again, and
// that checkpoint forked into a new session and answered there; the checkpoint route is served
// by other API processes than the chat.
func chatRollbackFork(g require.TestingT, chatAPI, cpAPI, session string) {
	ask, cp1, last := askHello(g, chatAPI, session)
	answerHello(g, chatAPI, session, "t2", ask, last, "Ada")

	var rb sessions.RollbackResult
	mpCheckpoints(g, cpAPI, map[string]any{"action": "rollback", "sessionId": session, "checkpointId": cp1.ID}, &rb)
	require.Equal(g, cp1.ID, rb.Head.ID)
	require.Len(g, rb.ActivePendingRequests, 1)
	require.Equal(g, ask.ResumeToken, rb.ActivePendingRequests[0].Token)
	answerHello(g, chatAPI, session, "t3", ask, -1, "Grace") // the restored run's stream: its own ids

	var fk sessions.ForkResult
	mpCheckpoints(g, cpAPI, map[string]any{"action": "fork", "sessionId": session, "checkpointId": cp1.ID}, &fk)
	require.Equal(g, cp1.ID, fk.ForkedFrom)
	require.Len(g, fk.Checkpoint.ActivePendingRequests, 1)
	forkAsk := fk.Checkpoint.ActivePendingRequests[0]
	require.NotEqual(g, ask.ResumeToken, forkAsk.Token)
	answerHello(g, chatAPI, fk.SessionID, "f1", contracts.Chunk{ResumeToken: forkAsk.Token, RequestID: forkAsk.RequestID}, -1, "Linus")
}

// runOfSession returns the run of the session's newest checkpoint.
// askMixed opens n chats through the API at base, in turn a refund approval, a research child
// question and hello's question (session(i) names chat i), and waits until every run is listed
// as waiting. It returns each chat's question, the offset of its response's last chunk and its
// run id.
func askMixed(t *testing.T, base string, n int, session func(int) string) (asks []contracts.Chunk, lasts []int64, runs []string) {
	t.Helper()
	asks, lasts, runs = make([]contracts.Chunk, n), make([]int64, n), make([]string, n)
	concurrently(t, n, func(g *goT, i int) {
		switch i % 3 {
		case 0:
			asks[i], lasts[i] = askRefund(g, base, session(i), "A-1001")
		case 1:
			asks[i], lasts[i] = askResearch(g, base, session(i))
		case 2:
			asks[i], _, lasts[i] = askHello(g, base, session(i))
		}
		runs[i] = runOfSession(g, session(i))
	})
	for i := range n {
		eventually(t, 10*time.Second, "the waiting status", func() bool { return statusAttribute(t, tc, runs[i]) == "waiting" })
	}
	return asks, lasts, runs
}

func runOfSession(g require.TestingT, session string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := service(tc, "").View(ctx, session)
	require.NoError(g, err)
	require.NotEmpty(g, v.Checkpoints)
	cp, err := service(tc, "").Checkpoint(ctx, session, v.Checkpoints[len(v.Checkpoints)-1].ID)
	require.NoError(g, err)
	return cp.RunID
}

// identities returns who completed the run's workflow tasks and who started its activities
// (each list in history order), with the activity types in order.
func identities(t *testing.T, runID string) (tasks, activities, types []string) {
	t.Helper()
	for _, e := range history(t, tc, runID).Events {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			tasks = append(tasks, e.GetWorkflowTaskCompletedEventAttributes().GetIdentity())
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			types = append(types, e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		case enums.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			activities = append(activities, e.GetActivityTaskStartedEventAttributes().GetIdentity())
		}
	}
	return tasks, activities, types
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// Issue 11 item 3, split polling: worker 1 polls workflow tasks only (--poll workflows), worker
// 2 activity tasks only (KORTYX_WORKER_POLL=activities), and an --api-only process serves the
// chat. The turn (a tool call and a streamed answer) reaches the client once, in order; the
// run's history shows every workflow task completed by worker 1's identity and every model and
// tool activity started by worker 2's; the session workflow's tasks ran on worker 1 too.
func TestSplitPollingOverRedis(t *testing.T) {
	redis := redistest.Start(t, redistest.AppendOnly())
	c := startCluster(t, redis, map[string]proc{
		"split-wf":  {args: []string{"--poll", "workflows"}},
		"split-act": {env: []string{"KORTYX_WORKER_POLL=activities"}},
	}, 1)
	require.Contains(t, c.workers["split-wf"].log.String(), "poll=workflows")
	require.Contains(t, c.workers["split-act"].log.String(), "poll=activities")

	session := "split-" + c.tq
	chatOrder(t, c.apis[0], session)
	run := runOfSession(t, session)
	tasks, acts, types := identities(t, run)
	require.NotEmpty(t, tasks)
	require.Equal(t, repeat("split-wf", len(tasks)), tasks, "every workflow task of the run on worker 1")
	require.Equal(t, []string{"kortyx.Model", "kortyx.Tool", "kortyx.Model"}, types, "two model passes around the lookup")
	require.Equal(t, repeat("split-act", 3), acts, "every activity on worker 2")
	tasks, acts, _ = identities(t, protocol.SessionWorkflowID(session))
	require.NotEmpty(t, tasks)
	require.Equal(t, repeat("split-wf", len(tasks)), tasks, "the session's workflow tasks on worker 1")
	require.Empty(t, acts)
}

// Issue 11 item 4: two worker processes and two --api-only processes over one Redis (AOF on),
// one test sharing them; each subtest leaves the cluster as the next one needs it (the worker
// kill comes last).
func TestMultiProcessRedis(t *testing.T) {
	redis := redistest.Start(t, redistest.AppendOnly())
	c := startCluster(t, redis, map[string]proc{"mp-w1": {}, "mp-w2": {}}, 2)
	a, b := c.apis[0], c.apis[1]
	prefix := "mp-" + c.tq

	// 20 chats at once through API process A (the checkpoint route on B): 5 text answers after
	// a tool call, 5 refund approvals (one approved, four denied), 5 research runs whose child's
	// question is answered, 5 hello chats rolled back and forked. Every response has exactly its
	// chunk sequence with ids that follow each other; an answer's response continues the run's
	// stream right after the question's done.
	t.Run("twenty concurrent chats", func(t *testing.T) {
		concurrently(t, 20, func(g *goT, i int) {
			session := fmt.Sprintf("%s-c%d", prefix, i)
			switch i % 4 {
			case 0:
				chatOrder(g, a, session)
			case 1:
				order := "A-1001"
				if i == 1 {
					order = "A-1003"
				}
				ask, last := askRefund(g, a, session, order)
				answerRefund(g, a, session, order, ask, last, i == 1)
			case 2:
				ask, last := askResearch(g, a, session)
				answerResearch(g, a, session, ask, last)
			case 3:
				chatRollbackFork(g, a, b, session)
			}
		})
	})

	// A reader on A reads the session chunk and the first three chunks of a turn and
	// disconnects; the same request to B with Last-Event-ID: 3 gets exactly the rest (ids 4…12)
	// and [DONE]. (The reader leaves once the run has completed, so that its disconnect cannot
	// cancel the run: what is tested is the resume, not the disconnect mode.)
	t.Run("resume on another API process", func(t *testing.T) {
		session := prefix + "-resume"
		body := prompt(session, "t1", support.WorkflowID, "Where is my order A-1002?")
		l := (&chatEnv{url: a}).open(t, body)
		var head []contracts.Chunk
		require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
		for want := 1; want <= 3; want++ {
			ev := l.next(t)
			require.Equal(t, strconv.Itoa(want), ev.ID)
			head = append(head, ev.chunk(t))
		}
		eventually(t, 30*time.Second, "the run's completion", func() bool {
			v, err := service(tc, "").View(context.Background(), session)
			if err != nil || len(v.Checkpoints) < 2 {
				return false
			}
			d, err := tc.DescribeWorkflow(context.Background(), runOfSession(t, session), "")
			return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
		})
		l.close()

		rest, last := exactly(t, mpChat(t, b, body, "Last-Event-ID: 3"), 3, append([]string{"session"}, orderTurn[4:]...)...)
		require.Equal(t, int64(12), last)
		require.Equal(t, orderText, sessions.Buffer(append(head, rest...)).Text)
	})

	// Redis restarted (SIGTERM, then started again on its append-only file) in the middle of the
	// answers' responses: four runs wait, readers on B's run stream route wait for their next
	// response, the answers go in through A, and Redis restarts as soon as the first reader has
	// a chunk. Each chat client (A) and each reader (B) that is cut (STREAM_UNAVAILABLE) asks
	// again with Last-Event-ID, its last id; joined, every client and reader has exactly the
	// answer's response, each chunk once, ids following each other from the question's done,
	// and the readers the same chunks as the clients. (The Redis client's own retries often
	// carry a read over a restart this short; the subtest below cuts them for sure.)
	t.Run("redis restarted mid-run", func(t *testing.T) {
		const n = 4
		asks := make([]contracts.Chunk, n)
		lasts := make([]int64, n)
		runs := make([]string, n)
		session := func(i int) string { return fmt.Sprintf("%s-restart%d", prefix, i) }
		concurrently(t, n, func(g *goT, i int) {
			if i%2 == 0 {
				asks[i], lasts[i] = askRefund(g, a, session(i), "A-1001")
			} else {
				asks[i], lasts[i] = askResearch(g, a, session(i))
			}
			runs[i] = runOfSession(g, session(i))
		})
		readers := make([]*runReader, n)
		var wg sync.WaitGroup
		for i := range n {
			readers[i] = &runReader{connected: make(chan struct{})}
			wg.Add(1)
			go func() { defer wg.Done(); readers[i].follow(b, runs[i], lasts[i]) }()
			<-readers[i].connected
		}
		got := make([][]string, n)
		restarted := make(chan struct{})
		go func() {
			defer close(restarted)
			deadline := time.Now().Add(30 * time.Second)
			for len(readers[0].seenNow()) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			redis.Restart()
		}()
		concurrently(t, n, func(g *goT, i int) {
			var r sseResponse
			if i%2 == 0 {
				r = chatResumed(g, a, resumeBody(session(i), "t2", asks[i], "", map[string]any{"selected": "deny"}))
				exactly(g, r, lasts[i], refundAnswer(false)...)
			} else {
				r = chatResumed(g, a, resumeBody(session(i), "t2", asks[i], "", map[string]any{"selected": "no"}))
				exactly(g, r, lasts[i], researchAnswer...)
			}
			for _, ev := range r.Events[1 : len(r.Events)-1] {
				got[i] = append(got[i], ev.ID+" "+ev.Data)
			}
		})
		wg.Wait()
		<-restarted
		for i, rr := range readers {
			require.NoError(t, rr.err, "reader %d", i)
			require.Equal(t, got[i], rr.seen, "reader %d saw what A's answer response showed", i)
			t.Logf("reader %d: %d cuts", i, len(rr.cuts))
			for _, code := range rr.cuts {
				require.Equal(t, contracts.CodeStreamUnavailable, code, "reader %d", i)
			}
		}
	})

	// Redis stopped and kept down: a new chat through A is refused with 503 STREAM_UNAVAILABLE
	// (JSON, retryable) and so is an answer through B; A's /readyz is 503 naming redis; the
	// waiting runs keep their state (the run's status and the session's pending question, by
	// query). Readers on B's run stream route are cut with STREAM_UNAVAILABLE and reconnect
	// with Last-Event-ID until Redis is back. Answers delivered through Temporal meanwhile make
	// the runs publish into a Redis that is down (the publish local activity retries,
	// STREAM_UNAVAILABLE; its marker in the history records more than one attempt). Redis
	// started again on its append-only file: the readers read exactly the answers' responses,
	// and the same answers sent through A's chat route reattach and get the same chunks and ids.
	t.Run("redis down", func(t *testing.T) {
		const n = 3
		session := func(i int) string { return fmt.Sprintf("%s-down%d", prefix, i) }
		asks, lasts, runs := askMixed(t, a, n, session)
		readers := make([]*runReader, n)
		var wg sync.WaitGroup
		for i := range n {
			readers[i] = &runReader{connected: make(chan struct{})}
			wg.Add(1)
			go func() { defer wg.Done(); readers[i].follow(b, runs[i], lasts[i]) }()
			<-readers[i].connected
		}
		redis.Stop()

		r := mpChat(t, a, prompt(prefix+"-down-new", "t1", support.WorkflowID, "Where is my order A-1002?"))
		require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Body)
		eb := decodeError(t, r)
		require.Equal(t, contracts.CodeStreamUnavailable, eb.Failure.Code)
		require.True(t, eb.Failure.Retryable)
		require.Equal(t, "The stream store (Redis) does not answer, so no turn was started; try again shortly.", eb.Error)
		r = mpChat(t, b, resumeBody(session(2), "t2", asks[2], "Ada", nil))
		require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Body)
		require.Equal(t, contracts.CodeStreamUnavailable, decodeError(t, r).Failure.Code)
		status, body := readyz(t, a)
		require.Equal(t, http.StatusServiceUnavailable, status)
		require.Equal(t, "unavailable", body["status"])
		require.Equal(t, map[string]any{"temporal": "ok", "redis": "STREAM_UNAVAILABLE"}, body["checks"])
		require.Equal(t, "The stream store (Redis) is unavailable; try again shortly.", body["error"])
		for i := range n {
			v, err := kortyx.Query(context.Background(), tc, runs[i])
			require.NoError(t, err)
			require.Equal(t, contracts.StatusWaiting, v.Status, "run %d", i)
			sv, err := service(tc, "").View(context.Background(), session(i))
			require.NoError(t, err)
			require.Len(t, sv.Pending, 1, "session %d", i)
			require.Equal(t, asks[i].ResumeToken, sv.Pending[0].Token, "session %d keeps its question", i)
		}

		// The answers go in through Temporal while Redis is down; the runs go on and publish.
		answers := []contracts.Response{answer(asks[0], "", "deny"), answer(asks[1], "", "no"), answer(asks[2], "Ada")}
		for i := range n {
			_, err := service(tc, "").Answer(context.Background(), session(i), answers[i], sessions.AnswerOptions{ClientTurnID: "t2"})
			require.NoError(t, err, "answer %d", i)
		}
		eventually(t, 20*time.Second, "cut readers", func() bool {
			return len(readers[0].cutsNow()) > 0 && len(readers[1].cutsNow()) > 0 && len(readers[2].cutsNow()) > 0
		})
		// Redis stays down a while longer, so that the runs' publishes fail and are retried
		// (asserted below from the history: not a timing assertion).
		time.Sleep(2 * time.Second)
		redis.Restart()
		wg.Wait()

		wants := [][]string{refundAnswer(false), researchAnswer, helloAnswer}
		bodies := []map[string]any{
			resumeBody(session(0), "t2", asks[0], "", map[string]any{"selected": "deny"}),
			resumeBody(session(1), "t2", asks[1], "", map[string]any{"selected": "no"}),
			resumeBody(session(2), "t2", asks[2], "Ada", nil),
		}
		for i := range n {
			rr := readers[i]
			require.NoError(t, rr.err, "reader %d", i)
			r := mpChat(t, a, bodies[i])
			exactly(t, r, lasts[i], wants[i]...)
			var got []string
			for _, ev := range r.Events[1 : len(r.Events)-1] {
				got = append(got, ev.ID+" "+ev.Data)
			}
			require.Equal(t, got, rr.seen, "reader %d saw what the reattached answer shows", i)
			for _, code := range rr.cuts {
				require.Equal(t, contracts.CodeStreamUnavailable, code, "reader %d", i)
			}
			// The response's done comes just before the run's last workflow task completes.
			eventually(t, 10*time.Second, fmt.Sprintf("run %d completes", i), func() bool {
				d, err := tc.DescribeWorkflow(context.Background(), runs[i], "")
				return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
			})
		}
		require.NotEmpty(t, readers[2].cuts)
		retried := 0
		for i := range n {
			if maxPublishAttempt(t, runs[i]) > 1 {
				retried++
			}
		}
		require.Equal(t, n, retried, "every run's publish was retried while Redis was down")
	})

	// One worker SIGKILLed while six chats wait for their answers (refunds, research children,
	// hello): the killed one is the worker that completed the latest workflow task of the first
	// chat's run, so at least that run has to move to the other worker (after its sticky queue
	// times out). The answers go in through B; every chat completes with its exact response.
	t.Run("worker killed", func(t *testing.T) {
		const n = 6
		session := func(i int) string { return fmt.Sprintf("%s-kill%d", prefix, i) }
		// Kill the worker the first run's latest workflow task ran on, once every run waits (a
		// kill inside a task would only make the other worker redo that task).
		asks, lasts, runs := askMixed(t, a, n, session)
		tasks, _, _ := identities(t, runs[0])
		victim := tasks[len(tasks)-1]
		w := c.workers[victim]
		require.NotNil(t, w, "a workflow task by %q", victim)
		require.NoError(t, w.cmd.Process.Kill())
		_ = w.cmd.Wait()
		require.Equal(t, -1, w.cmd.ProcessState.ExitCode(), "SIGKILL")

		concurrently(t, n, func(g *goT, i int) {
			switch i % 3 {
			case 0:
				answerRefund(g, b, session(i), "A-1001", asks[i], lasts[i], false)
			case 1:
				answerResearch(g, b, session(i), asks[i], lasts[i])
			case 2:
				answerHello(g, b, session(i), "t2", asks[i], lasts[i], "Ada")
			}
		})
		tasks, _, _ = identities(t, runs[0])
		require.NotEqual(t, victim, tasks[len(tasks)-1], "the first run ended on the other worker")
	})
}

// maxPublishAttempt returns the highest attempt of the run's publishes: its local activity
// markers' and, for the chunks a model pass publishes first, its activities' attempts.
func maxPublishAttempt(t *testing.T, runID string) int {
	t.Helper()
	most := 0
	for _, e := range history(t, tc, runID).Events {
		// A model pass publishes the chunks queued before it: its retries are its activity's.
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			most = max(most, int(a.GetAttempt()))
			continue
		}
		m := e.GetMarkerRecordedEventAttributes()
		if m == nil || m.GetMarkerName() != "LocalActivity" {
			continue
		}
		var data struct{ Attempt int }
		p := m.GetDetails()["data"]
		require.NotNil(t, p)
		require.NoError(t, json.Unmarshal(p.GetPayloads()[0].GetData(), &data))
		most = max(most, data.Attempt)
	}
	return most
}

// runReader follows a run's stream on an API process's run stream route until the end of a
// response, reconnecting with Last-Event-ID (its last id) when the stream is cut or refused.
type runReader struct {
	mu        sync.Mutex
	connected chan struct{}    // closed once its first connection is answered
	seen      []string         // "id data" of each chunk read
	cuts      []contracts.Code // the codes of the error chunks that ended a connection
	refused   int              // connections refused (503)
	err       error
}

func (rr *runReader) follow(base, runID string, after int64) {
	defer func() {
		select {
		case <-rr.connected:
		default:
			close(rr.connected)
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	first := true
	for time.Now().Before(deadline) {
		req, err := http.NewRequest(http.MethodGet, base+"/v1/runs/"+runID+"/stream?until=response", nil)
		if err != nil {
			rr.err = err
			return
		}
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
		resp, err := mpHTTP.Do(req)
		if err != nil {
			rr.err = err
			return
		}
		if first {
			close(rr.connected)
			first = false
		}
		if resp.StatusCode != http.StatusOK {
			rr.refused++
			_ = resp.Body.Close()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var cut contracts.Code
		ended := false
		err = sseclient.ReadSSE(resp.Body, func(id int64, c contracts.Chunk) error {
			if id == 0 {
				if c.Type == contracts.ChunkError && c.Failure != nil {
					cut = c.Failure.Code
				}
				return nil
			}
			if id != after+1 {
				return fmt.Errorf("id %d after %d", id, after)
			}
			after = id
			rr.mu.Lock()
			rr.seen = append(rr.seen, strconv.FormatInt(id, 10)+" "+string(must(json.Marshal(c))))
			rr.mu.Unlock()
			ended = c.Type == contracts.ChunkDone
			return nil
		})
		_ = resp.Body.Close()
		if ended {
			rr.err = err
			return
		}
		if err != nil && cut == "" {
			rr.err = err
			return
		}
		rr.mu.Lock()
		rr.cuts = append(rr.cuts, cut)
		rr.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	rr.err = fmt.Errorf("the stream of %s did not end within 60 s (cuts %v, refused %d)", runID, rr.cuts, rr.refused)
}

func (rr *runReader) cutsNow() []contracts.Code {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]contracts.Code(nil), rr.cuts...)
}

func (rr *runReader) seenNow() []string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]string(nil), rr.seen...)
}

// chatResumed sends a chat request to base and, while the response is cut by the stream store
// (it ends with an error chunk STREAM_UNAVAILABLE, or is refused with 503 STREAM_UNAVAILABLE),
// sends it again with Last-Event-ID: the last id it has; it returns the joined response: the
// first session chunk, every chunk with an id, [DONE].
func chatResumed(g require.TestingT, base string, body any) sseResponse {
	var joined sseResponse
	last := int64(-1)
	deadline := time.Now().Add(60 * time.Second)
	for {
		require.True(g, time.Now().Before(deadline), "the response did not come back within 60 s")
		var r sseResponse
		if last < 0 {
			r = mpChat(g, base, body)
		} else {
			r = mpChat(g, base, body, "Last-Event-ID: "+strconv.FormatInt(last, 10))
		}
		if r.Status == http.StatusServiceUnavailable {
			require.Contains(g, r.Body, string(contracts.CodeStreamUnavailable))
			time.Sleep(100 * time.Millisecond)
			continue
		}
		require.Equal(g, http.StatusOK, r.Status, r.Body)
		require.NoError(g, r.ParseErr, r.Body)
		joined.Status, joined.Header = r.Status, r.Header
		cut := false
		for i, ev := range r.Events {
			switch {
			case i == 0 && len(joined.Events) == 0:
				joined.Events = append(joined.Events, ev) // the session chunk, once
			case ev.ID != "":
				joined.Events = append(joined.Events, ev)
				last = must(strconv.ParseInt(ev.ID, 10, 64))
			case strings.Contains(ev.Data, `"code":"`+string(contracts.CodeStreamUnavailable)+`"`):
				cut = true
			}
		}
		joined.Body += r.Body
		if !cut {
			joined.Events = append(joined.Events, event{Data: "[DONE]"})
			return joined
		}
	}
}
