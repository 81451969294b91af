package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/kortyxwire"
	"go.temporal.io/sdk/worker"
)

// BenchmarkHostileSessions: what a dev-mode stack holds after N turns of a mix of valid chat
// turns and hostile requests (issue 31: "after 851 turns of hostile and valid requests the dev
// worker held 536 MB RSS and did not give it back"). The load ([hostile]) runs rounds of
// hello sessions (a prompt, then the answer) with and without clientTurnIds, prompts of
// KORTYX_BENCH_HUGE_KB (default 900) KB and prompts with a long history (both within the 1 MiB
// body limit), retries of a turn, answers with a wrong token and to unknown sessions, readers
// that leave after the first event, and the hostile requests of a fuzzing client on every
// route: bodies over the limit, malformed JSON, bodies cut off midway, unknown runs, sessions
// and checkpoints. KORTYX_BENCH_TURNS (default 850) is how many chat turns (a 200 answer of
// /api/chat) it runs.
//
// Variants:
//   - inprocess: app.Run in the benchmark's process (worker, in-memory broker, HTTP API, as
//     BenchmarkFinishedSessions runs it, with the dev defaults: a sticky cache of 200). It reads
//     the heap in use (after two runtime.GC), VmRSS (after debug.FreeOSMemory) and the goroutine
//     count at the baseline (after 20 warm-up sessions), right after the load, and once settled
//     (10 s later: twice the stream retention of 5 s), then the heap once the sticky cache was
//     purged. KORTYX_BENCH_HEAP_PROFILE=<dir> writes heap profiles (after.pb.gz,
//     settled.pb.gz) and goroutine lists there.
//   - process/<name>: the worker program in dev mode (its own dev server, the in-memory
//     broker, KORTYX_STREAM_RETENTION=5s) as a process of its own, as the issue ran it, for each
//     binary of KORTYX_BENCH_WORKERS ("name=path,name=path"; default: ./worker of this module,
//     built). Nothing forces a collection in that process: its VmRSS is read at the baseline and
//     once settled, each after waiting KORTYX_BENCH_SETTLE (default 240s; the runtime collects
//     at least every 2 minutes, and its scavenger then returns the free pages), and right after
//     the load.
//
// KORTYX_BENCH_HOSTILE_VARIANTS=inprocess or process runs one kind only. It starts dev servers,
// and the inprocess variant sets the process-wide sticky cache size, so run it alone:
//
//	go test ./bench/ -run '^$' -bench HostileSessions -benchtime 1x -timeout 2h
func BenchmarkHostileSessions(b *testing.B) {
	turns := envInt("KORTYX_BENCH_TURNS", 850)
	settleFor := 240 * time.Second
	if d, err := time.ParseDuration(os.Getenv("KORTYX_BENCH_SETTLE")); err == nil && d > 0 {
		settleFor = d
	}
	if os.Getenv("KORTYX_BENCH_HOSTILE_VARIANTS") != "process" {
		b.Run("inprocess", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				hostileInProcess(b, turns)
			}
		})
	}
	if os.Getenv("KORTYX_BENCH_HOSTILE_VARIANTS") == "inprocess" {
		return
	}
	bins, err := hostileWorkers()
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range bins {
		b.Run("process/"+w[0], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				hostileProcess(b, w[0], w[1], turns, settleFor)
			}
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// hostileInProcess runs the load against app.Run in this process.
func hostileInProcess(b *testing.B, turns int) {
	root, err := moduleRoot()
	if err != nil {
		b.Fatal(err)
	}
	// The worker program's dev mode, configured as it is: by the environment.
	for k, v := range map[string]string{"TEMPORAL_ADDRESS": "", "TEMPORAL_PROFILE": "", "TEMPORAL_CONFIG_FILE": filepath.Join(b.TempDir(), "none.toml"),
		"KORTYX_ROOT": b.TempDir(), "TEMPORAL_CLI_PATH": filepath.Join(root, ".tools", "bin", "temporal"), "KORTYX_DEV_PORT": "0",
		"KORTYX_DEV_UI_PORT": "-1", "KORTYX_HTTP_ADDR": "127.0.0.1:0", "KORTYX_STREAM_RETENTION": "5s", "KORTYX_STICKY_CACHE": "",
		"KORTYX_STREAM_MAX_RUNS": "", "KORTYX_REDIS_URL": "", "KORTYX_EXAMPLES": "", "KORTYX_WORKFLOWS": "", "OPENAI_API_KEY": "",
		"OPENAI_BASE_URL": "", "KORTYX_MCP_SERVERS": ""} {
		b.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cfg := app.ConfigFromEnv()
	chosen, err := examples.FromEnv()
	if err != nil {
		b.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	o := chosen.Options()
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	running := make(chan app.Running, 1)
	o.Started = func(r app.Running) { running <- r }
	done := make(chan error, 1)
	go func() { done <- app.Run(sctx, cfg, o) }()
	defer func() { stop(); <-done }()
	var st app.Running
	select {
	case st = <-running:
	case err := <-done:
		b.Fatal(err)
	}
	h := newHostile("http://" + st.HTTPAddr)
	if err := h.warmUp(ctx); err != nil {
		b.Fatal(err)
	}
	h.reset()
	m := hostileMemory{inProcess: true}
	m.heap[0], m.rss[0] = settle(0)
	m.goroutines[0] = runtime.NumGoroutine()
	start := time.Now()
	if err := h.run(ctx, turns); err != nil {
		b.Fatal(err)
	}
	m.took = time.Since(start)
	m.heap[1], m.rss[1] = settle(0)
	m.goroutines[1] = runtime.NumGoroutine()
	heapProfile(b, "after")
	m.heap[2], m.rss[2] = settle(2 * time.Second * 5) // twice the retention
	m.goroutines[2] = runtime.NumGoroutine()
	heapProfile(b, "settled")
	worker.PurgeStickyWorkflowCache()
	m.heapPurged, _ = settle(time.Second)
	m.report(b, "inprocess", h)
}

// heapProfile writes the heap profile to $KORTYX_BENCH_HEAP_PROFILE/<name>.pb.gz, if set.
func heapProfile(b *testing.B, name string) {
	dir := os.Getenv("KORTYX_BENCH_HEAP_PROFILE")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, name+".pb.gz"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
	g, err := os.Create(filepath.Join(dir, name+".goroutines.txt"))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if err := pprof.Lookup("goroutine").WriteTo(g, 1); err != nil {
		b.Fatal(err)
	}
}

// hostileMemory is one measurement: [0] baseline, [1] right after the load, [2] settled.
type hostileMemory struct {
	rss        [3]float64
	inProcess  bool
	heap       [3]float64 // in process
	goroutines [3]int     // in process
	heapPurged float64    // in process: settled, then the sticky cache purged
	trail      []float64  // of a process: VmRSS every 30 s while it settles
	took       time.Duration
}

func (m hostileMemory) report(b *testing.B, variant string, h *hostile) {
	b.ReportMetric(m.rss[1]/1e6, "MB-rss-after")
	b.ReportMetric(m.rss[2]/1e6, "MB-rss-settled")
	b.ReportMetric((m.rss[2]-m.rss[0])/1e6, "MB-rss-settled-growth")
	mb := func(v []float64) string {
		var parts []string
		for _, x := range v {
			parts = append(parts, fmt.Sprintf("%.1f", x/1e6))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	extra := ""
	if m.inProcess {
		extra = fmt.Sprintf(",\"heapMB\":%s,\"heapPurgedMB\":%.1f,\"goroutines\":[%d,%d,%d]", mb(m.heap[:]), m.heapPurged/1e6,
			m.goroutines[0], m.goroutines[1], m.goroutines[2])
	} else {
		extra = ",\"rssSettlingMB\":" + mb(m.trail)
	}
	fmt.Printf("Hostile {\"variant\":%q,\"turns\":%d,\"requests\":%d,\"seconds\":%.0f,\"rssMB\":%s%s,\"statuses\":%s}\n",
		variant, h.turns.Load(), h.requests.Load(), m.took.Seconds(), mb(m.rss[:]), extra, h.statusJSON())
}

// hostileWorkers returns the worker binaries of KORTYX_BENCH_WORKERS, or ./worker built.
func hostileWorkers() ([][2]string, error) {
	if v := os.Getenv("KORTYX_BENCH_WORKERS"); v != "" {
		var out [][2]string
		for _, nv := range strings.Split(v, ",") {
			name, path, ok := strings.Cut(nv, "=")
			if !ok {
				return nil, fmt.Errorf("KORTYX_BENCH_WORKERS=%q: give name=path pairs separated by commas", v)
			}
			out = append(out, [2]string{name, path})
		}
		return out, nil
	}
	bin, err := buildProgram("worker", "./worker")
	if err != nil {
		return nil, err
	}
	return [][2]string{{"worker", bin}}, nil
}

// hostileProcess runs the load against the worker program bin in dev mode.
func hostileProcess(b *testing.B, name, bin string, turns int, settleFor time.Duration) {
	root, err := moduleRoot()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS=", "TEMPORAL_PROFILE=", "TEMPORAL_CONFIG_FILE="+filepath.Join(b.TempDir(), "none.toml"),
		"KORTYX_ROOT="+b.TempDir(), "TEMPORAL_CLI_PATH="+filepath.Join(root, ".tools", "bin", "temporal"),
		"KORTYX_DEV_PORT=0", "KORTYX_DEV_UI_PORT=-1", "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_STREAM_RETENTION=5s",
		"KORTYX_STICKY_CACHE=", "KORTYX_STREAM_MAX_RUNS=", "KORTYX_REDIS_URL=", "KORTYX_LOG_FORMAT=", "KORTYX_LOG_LEVEL=",
		"KORTYX_EXAMPLES=", "KORTYX_WORKFLOWS=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "KORTYX_MCP_SERVERS=", "GOGC=", "GOMEMLIMIT=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if strings.Contains(l, `msg="kortyx worker: HTTP API"`) {
				if _, rest, ok := strings.Cut(l, " addr="); ok {
					v, _, _ := strings.Cut(rest, " ")
					addr <- v
				}
			}
		}
	}()
	var base string
	select {
	case base = <-addr:
	case <-time.After(5 * time.Minute):
		b.Fatal("the worker did not serve its HTTP API within 5 minutes")
	}
	rss := func() float64 {
		v, err := processRSS(cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		return float64(v)
	}
	h := newHostile(base)
	if err := h.warmUp(ctx); err != nil {
		b.Fatal(err)
	}
	h.reset()
	var m hostileMemory
	time.Sleep(settleFor) // a measurement's wait for the runtime's collection, not a synchronization
	m.rss[0] = rss()
	start := time.Now()
	if err := h.run(ctx, turns); err != nil {
		b.Fatal(err)
	}
	m.took = time.Since(start)
	m.rss[1] = rss()
	for waited := time.Duration(0); waited < settleFor; waited += 30 * time.Second {
		time.Sleep(min(30*time.Second, settleFor-waited))
		m.trail = append(m.trail, rss())
	}
	m.rss[2] = m.trail[len(m.trail)-1]
	m.report(b, "process/"+name, h)
}

// processRSS is VmRSS of /proc/<pid>/status in bytes.
func processRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status")
}

// hostile is the load: valid hello sessions and what a fuzzing client sends, on every route.
type hostile struct {
	base     string
	hc       *http.Client
	huge     string // a prompt of KORTYX_BENCH_HUGE_KB KB
	turns    atomic.Int64
	requests atomic.Int64
	mu       sync.Mutex
	statuses map[string]int // "kind status" -> count
}

func newHostile(base string) *hostile {
	kb := envInt("KORTYX_BENCH_HUGE_KB", 900)
	return &hostile{base: base, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}},
		huge: strings.Repeat("lorem ipsum ", kb*1024/12), statuses: map[string]int{}}
}

func (h *hostile) statusJSON() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	raw, _ := json.Marshal(h.statuses)
	return string(raw)
}

func (h *hostile) count(kind string, status int) {
	h.requests.Add(1)
	h.mu.Lock()
	h.statuses[kind+" "+strconv.Itoa(status)]++
	h.mu.Unlock()
}

// reset forgets what was counted (the warm-up's requests).
func (h *hostile) reset() {
	h.turns.Store(0)
	h.requests.Store(0)
	h.mu.Lock()
	clear(h.statuses)
	h.mu.Unlock()
}

// warmUp runs 20 hello sessions.
func (h *hostile) warmUp(ctx context.Context) error {
	return parallel(20, func(int) error { return h.session(ctx, "hi", true, 0) })
}

// run runs rounds of the load, 8 at a time, until turns chat turns were answered.
func (h *hostile) run(ctx context.Context, turns int) error {
	start := h.turns.Load()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h.turns.Load()-start < int64(turns) {
				if err := h.round(ctx, int(next.Add(1))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// round is one step of the mix: kind i modulo the number of kinds.
func (h *hostile) round(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	switch i % 8 {
	case 0: // a session as Kortyx's client sends it (no clientTurnId)
		return h.session(ctx, "hi", false, 0)
	case 1: // a session with clientTurnIds, a retry of its prompt, an answer with a wrong token
		return h.session(ctx, "hi", true, 1)
	case 2: // a prompt as large as the body limit allows
		return h.session(ctx, h.huge, true, 1)
	case 3: // a long history
		return h.longHistory(ctx)
	case 4: // a reader that leaves after the first event
		return h.disconnect(ctx)
	case 5: // bodies over the limit and cut off midway
		h.post(ctx, "oversized", "/api/chat", h.body(map[string]any{"messages": []any{map[string]any{"role": "user", "content": strings.Repeat("x", 1<<20)}}}))
		h.post(ctx, "oversized-aisdk", "/api/ui/chat", []byte(`{"id":"x","messages":[{"role":"user","parts":[{"type":"text","text":"`+strings.Repeat("y", 1<<20)+`"}]}]}`))
		h.post(ctx, "oversized-mcp", "/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello","arguments":{"input":"`+strings.Repeat("z", 1<<20)+`"}}}`))
		h.cutOff(ctx, "/api/chat")
		return nil
	case 6: // malformed JSON on every route
		bad := []byte(`{"sessionId":"s","messages":[{"role":"user","content":"` + h.huge[:len(h.huge)/2] + `"}`)
		for _, p := range []string{"/api/chat", "/api/ui/chat", "/mcp", "/a2a/hello", "/api/checkpoints", "/api/chat/stop"} {
			h.post(ctx, "malformed "+p, p, bad)
		}
		return nil
	default: // unknown sessions, runs and checkpoints; many clientTurnIds
		id := uuid.NewString()
		h.post(ctx, "unknown-answer", "/api/chat", h.body(map[string]any{"sessionId": "session-" + id, "clientTurnId": "turn-" + id,
			"messages": []any{map[string]any{"role": "user", "content": "Ada", "metadata": map[string]any{"resume": map[string]any{"token": "t-" + id, "requestId": "r"}}}}}))
		h.post(ctx, "unknown-stop", "/api/chat/stop", []byte(`{"sessionId":"session-`+id+`"}`))
		h.post(ctx, "unknown-checkpoint", "/api/checkpoints", []byte(`{"checkpointId":"cp-`+id+`","action":"rollback"}`))
		h.post(ctx, "unknown-aisdk", "/api/ui/chat", []byte(`{"id":"`+id+`","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`))
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		h.get(sctx, "unknown-stream", "/v1/runs/run-"+id+"/stream")
		scancel()
		return nil
	}
}

func (h *hostile) body(v any) []byte {
	raw, _ := json.Marshal(v)
	return raw
}

// post sends body to path and reads the answer to its end; it records the status.
func (h *hostile) post(ctx context.Context, kind, path string, body []byte) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("accept", "application/json, text/event-stream")
	resp, err := h.hc.Do(req)
	if err != nil {
		h.count(kind, 0)
		return 0, nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	h.count(kind, resp.StatusCode)
	return resp.StatusCode, out
}

func (h *hostile) get(ctx context.Context, kind, path string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+path, nil)
	if err != nil {
		return
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		h.count(kind, 0)
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	h.count(kind, resp.StatusCode)
}

// chat sends a chat request and returns its chunks; a 200 answer counts as a turn.
func (h *hostile) chat(ctx context.Context, kind string, body map[string]any) ([]kortyxwire.Chunk, error) {
	status, out := h.post(ctx, kind, "/api/chat", h.body(body))
	if status != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %.300s", kind, status, out)
	}
	h.turns.Add(1)
	return kortyxwire.Read(bytes.NewReader(out), 0)
}

// session runs a hello session: the prompt, then the answer. With ids, both carry a
// clientTurnId; extra > 0 retries the prompt (a reattach) and sends an answer with a wrong
// token before the right one.
func (h *hostile) session(ctx context.Context, prompt string, ids bool, extra int) error {
	session := "session-" + uuid.NewString()
	hi := map[string]any{"role": "user", "content": prompt}
	body := map[string]any{"sessionId": session, "workflowId": "hello", "messages": []any{hi}, "context": map[string]any{}}
	if ids {
		body["clientTurnId"] = "turn-" + uuid.NewString()
	}
	chunks, err := h.chat(ctx, "prompt", body)
	if err != nil {
		return err
	}
	if extra > 0 {
		if chunks, err = h.chat(ctx, "prompt-retry", body); err != nil {
			return err
		}
	}
	var ask kortyxwire.Chunk
	for _, ch := range chunks {
		if ch.Type() == "interrupt" {
			ask = ch
		}
	}
	if ask == nil {
		return fmt.Errorf("session %s: no question in %v", session, chunks)
	}
	if extra > 0 {
		wrong := map[string]any{"sessionId": session, "clientTurnId": "turn-" + uuid.NewString(), "messages": []any{hi, map[string]any{"role": "user", "content": "Eve",
			"metadata": map[string]any{"resume": map[string]any{"token": "not-" + ask.String("resumeToken"), "requestId": ask.String("requestId"), "selected": []string{"Eve"}}}}}}
		h.post(ctx, "wrong-token", "/api/chat", h.body(wrong))
	}
	answer := kortyxwire.Answer(ask, nil, "Ada")
	body = map[string]any{"sessionId": session, "workflowId": "hello", "context": map[string]any{},
		"messages": []any{hi, map[string]any{"role": "assistant", "content": ""}, answer}}
	if ids {
		body["clientTurnId"] = "turn-" + uuid.NewString()
	}
	if chunks, err = h.chat(ctx, "answer", body); err != nil {
		return err
	}
	var text strings.Builder
	for _, ch := range chunks {
		text.WriteString(ch.String("delta") + ch.String("content"))
	}
	if len(chunks) == 0 || chunks[len(chunks)-1].Type() != "done" || !strings.Contains(text.String(), "Ada") {
		return fmt.Errorf("session %s: the answer got %v", session, chunks)
	}
	return nil
}

// longHistory sends a prompt with 1,500 earlier messages (about 750 KB) and a clientTurnId.
func (h *hostile) longHistory(ctx context.Context) error {
	var msgs []any
	line := strings.Repeat("m", 480)
	for i := range 1500 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]any{"role": role, "content": line, "id": "m" + strconv.Itoa(i)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "hi"})
	_, err := h.chat(ctx, "long-history", map[string]any{"sessionId": "session-" + uuid.NewString(), "clientTurnId": "turn-" + uuid.NewString(),
		"workflowId": "hello", "messages": msgs})
	return err
}

// disconnect sends a prompt with a clientTurnId and leaves after the first event.
func (h *hostile) disconnect(ctx context.Context) error {
	body := h.body(map[string]any{"sessionId": "session-" + uuid.NewString(), "clientTurnId": "turn-" + uuid.NewString(), "workflowId": "hello",
		"messages": []any{map[string]any{"role": "user", "content": h.huge[:len(h.huge)/4]}}})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("content-type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		h.count("disconnect", 0)
		return nil
	}
	h.count("disconnect", resp.StatusCode)
	if resp.StatusCode == http.StatusOK {
		h.turns.Add(1)
		_, _ = bufio.NewReader(resp.Body).ReadString('\n')
	}
	cancel()
	resp.Body.Close()
	return nil
}

// cutOff announces a body of 1,000,000 bytes, sends 200 KB of it and closes the connection.
func (h *hostile) cutOff(ctx context.Context, path string) {
	host := strings.TrimPrefix(h.base, "http://")
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		h.count("cut-off", 0)
		return
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n", path, host)
	_, _ = conn.Write([]byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("c", 200<<10)))
	h.count("cut-off", 0)
}
