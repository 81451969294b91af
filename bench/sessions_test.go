package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/kortyxwire"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// BenchmarkFinishedSessions: what N finished chat sessions leave in the memory of a dev-mode
// process (app.Run: worker, in-memory broker and HTTP API in one process). Each session
// is the hello example through the chat route, as Kortyx's client sends it: a prompt (the run
// asks for a name) and the answer (the run completes); the session workflow then waits for its
// next turn. It reads the Go heap in use (after two runtime.GC) and VmRSS (after
// debug.FreeOSMemory) once the stack has served a few sessions (baseline), right after the N
// sessions (after), and again once the broker's retention has passed (settled), and reports
// each growth over the baseline per session and in MB. KORTYX_BENCH_SESSIONS sets N (default
// 500); KORTYX_BENCH_PROMPT_KB makes each session's prompt that many KB (default: "hi").
//
// Variants: "bounded" is the stack with a sticky cache of KORTYX_BENCH_STICKY_CACHE (default
// 100, below N, so that the bound shows; the dev default is 200) and
// a short stream retention (2 s) so that "settled" comes soon; "unbounded" is the SDK's sticky
// cache of 10,000 and no stream retention (the state before these bounds). After "settled" it
// purges the sticky cache and reads the heap (what the cache held), then stops the stack and
// reads it again (what the chat handlers and the broker held).
//
// It starts its own dev server and workers, and sets the process-wide sticky cache size, so run
// it alone:
//
//	go test ./bench/ -run '^$' -bench FinishedSessions -benchtime 1x
func BenchmarkFinishedSessions(b *testing.B) {
	n := 500
	if v, err := strconv.Atoi(os.Getenv("KORTYX_BENCH_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	root, err := moduleRoot()
	if err != nil {
		b.Fatal(err)
	}
	bin, err := devserver.Find(root)
	if err != nil {
		b.Fatalf("bench: the Temporal CLI is needed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{BinaryPath: bin, UIPort: -1, SearchAttributes: protocol.SearchAttributeNames()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	quiet := log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	c, err := srv.Client(client.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, variant := range []string{"bounded", "unbounded"} {
		b.Run(variant, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				m := finishedSessions(b, ctx, srv.Address(), variant, n)
				b.ReportMetric(m.heapAfter/1024/float64(n), "KB-heap/session")
				b.ReportMetric(m.rssAfter/1024/float64(n), "KB-rss/session")
				b.ReportMetric(m.heapSettled/1024/float64(n), "KB-heap/session-settled")
				b.ReportMetric(m.rssSettled/1024/float64(n), "KB-rss/session-settled")
				fmt.Printf("Sessions {\"variant\":%q,\"sessions\":%d,\"heapBaseMB\":%.1f,\"rssBaseMB\":%.1f,\"heapAfterMB\":%.1f,\"rssAfterMB\":%.1f,\"heapSettledMB\":%.1f,\"rssSettledMB\":%.1f,\"heapPurgedMB\":%.1f,\"heapStoppedMB\":%.1f}\n",
					variant, n, m.heap0/1e6, m.rss0/1e6, m.heapAfter/1e6, m.rssAfter/1e6, m.heapSettled/1e6, m.rssSettled/1e6, m.heapPurged/1e6, m.heapStopped/1e6)
			}
		})
	}
}

type sessionsMemory struct {
	heap0, rss0             float64 // baseline
	heapAfter, rssAfter     float64 // growth right after the sessions
	heapSettled, rssSettled float64 // growth once the retention has passed
	heapPurged              float64 // growth once the sticky cache was purged too
	heapStopped             float64 // growth once the stack (worker, HTTP API, broker) stopped
}

func finishedSessions(b *testing.B, ctx context.Context, temporalAddr string, variant string, n int) sessionsMemory {
	b.Helper()
	const retention = 2 * time.Second
	sticky := 100
	if v, err := strconv.Atoi(os.Getenv("KORTYX_BENCH_STICKY_CACHE")); err == nil && v > 0 {
		sticky = v
	}
	cfg := app.Config{TemporalAddress: temporalAddr, TaskQueue: "kortyx-bench-sessions-" + uuid.NewString(), StreamRetention: retention,
		StickyCacheSize: sticky, HTTPAddr: "127.0.0.1:0", FakeModels: true}
	if variant == "unbounded" {
		cfg.StreamRetention = -1
		cfg.StickyCacheSize = 10_000
	}
	chosen, err := examples.Parse("hello")
	if err != nil {
		b.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	o := chosen.Options()
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	running := make(chan app.Running, 1)
	o.Started = func(r app.Running) { running <- r }
	done := make(chan error, 1)
	go func() { done <- app.Run(sctx, cfg, o) }()
	var st app.Running
	select {
	case st = <-running:
	case err := <-done:
		b.Fatal(err)
	}
	stopStack := func() { // the worker, the HTTP API and the broker
		stop()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		done <- nil
	}
	defer stopStack() // again after the measurement's: a no-op
	prompt := "hi"
	if v, err := strconv.Atoi(os.Getenv("KORTYX_BENCH_PROMPT_KB")); err == nil && v > 0 {
		prompt = strings.Repeat("hi ", v*1024/3)
	}
	kc := &kortyxwire.Client{ChatURL: "http://" + st.HTTPAddr + "/api/chat"}
	run := func(count int) {
		if err := parallel(count, func(int) error { return helloSession(ctx, kc, prompt) }); err != nil {
			b.Fatal(err)
		}
	}
	run(20) // warm up: code paths, pools, the first workflow tasks
	var m sessionsMemory
	m.heap0, m.rss0 = settle(retention)
	run(n)
	h, r := settle(0)
	m.heapAfter, m.rssAfter = h-m.heap0, r-m.rss0
	h, r = settle(retention + time.Second)
	m.heapSettled, m.rssSettled = h-m.heap0, r-m.rss0
	// Attribution: what the sticky cache held, then what the handlers and the broker held.
	worker.PurgeStickyWorkflowCache()
	h, _ = settle(time.Second) // evicted workflows end their goroutines asynchronously
	m.heapPurged = h - m.heap0
	stopStack()
	h, _ = settle(time.Second)
	m.heapStopped = h - m.heap0
	return m
}

// helloSession runs one hello session through the chat route: the prompt, then the answer to
// its question; both responses must end with done, the second with the greeting.
func helloSession(ctx context.Context, kc *kortyxwire.Client, prompt string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	session := uuid.NewString()
	hi := kortyxwire.Message{Role: "user", Content: prompt}
	chunks, err := kc.Send(ctx, session, "hello", []kortyxwire.Message{hi})
	if err != nil {
		return err
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
	chunks, err = kc.Send(ctx, session, "hello", []kortyxwire.Message{hi, {Role: "assistant", Content: ""}, kortyxwire.Answer(ask, nil, "Ada")})
	if err != nil {
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

// settle waits d, then returns the heap in use after two GCs and VmRSS after FreeOSMemory.
func settle(d time.Duration) (heap, rss float64) {
	time.Sleep(d) // a measurement's wait for the retention, not a synchronization
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	debug.FreeOSMemory()
	return float64(ms.HeapInuse), float64(vmRSS())
}

// vmRSS is this process's VmRSS in bytes (0 when /proc is not there).
func vmRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
