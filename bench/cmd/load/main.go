// Command load is the load test over Redis of make bench (docs/performance.md, "Load over
// Redis"): for each level of concurrent chat sessions it starts, as real processes, one
// redis-server, two workers and two --api-only API processes (bench/cmd/loadworker, the worker
// program with the load agent), on one Temporal dev server; then N sessions at once, half on
// each API process, each streaming a slow answer of -chunks text deltas (one every -interval)
// through the chat route, a quarter of them answering an approval first. Then, for levels up to
// -baseline-max, the same N sessions against one process with the in-memory broker (worker and
// API together), the baseline of the added latency.
//
// With -previous REV, each level of the Redis variant runs twice on the same dev server, first
// with the processes built from commit REV of the checkout's history (the previous release),
// then with the current ones: the side-by-side comparison of issue 31 (the result's "build" is
// "previous" or "current").
//
// Per level it measures: provider delta → client latency (p50, p99; each delta carries the
// provider's clock), request → response headers (the turn started) and request → first text
// delta (p50, p99), turns per second, API-process RSS per open stream, Redis memory per stream
// while live and after the stream retention (INFO memory), CPU per turn for each role (utime +
// stime of /proc/<pid>/stat) and errors. It prints one "Load {json}" line per level and
// variant, and the table; any error makes it exit 1 after printing.
//
//	go run ./bench/cmd/load [-levels 100,300,1000] [-chunks 200] [-interval 20ms] [-baseline-max 1000] [-previous REV]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/bench/internal/proccpu"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/test/kortyxwire"
	"github.com/redis/go-redis/v9"
)

func main() {
	levels := flag.String("levels", "100,300,1000", "comma-separated numbers of concurrent sessions")
	chunks := flag.Int("chunks", 200, "text deltas per answer")
	interval := flag.Duration("interval", 20*time.Millisecond, "time between two deltas of an answer (20ms: 50 deltas a second)")
	// 90 s: a run of make bench with 30 s saw, at 1,000 sessions, one prompt turn find its
	// finished run's stream already expired (STREAM_GONE) when its reader came; the turn starts
	// of that level take seconds (the result's startP99ms).
	retention := flag.Duration("retention", 90*time.Second, "KORTYX_STREAM_RETENTION of the processes (how long a finished stream stays in Redis)")
	levelTimeout := flag.Duration("level-timeout", 10*time.Minute, "time limit of one level's sessions")
	baselineMax := flag.Int("baseline-max", 1000, "also run each level up to this many sessions against one process with the in-memory broker (0: none)")
	previous := flag.String("previous", "", "a commit of the checkout's history: also run each Redis level with the processes built from it, before the current ones")
	flag.Parse()
	var ns []int
	for _, s := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 4 {
			fmt.Fprintf(os.Stderr, "load: -levels: %q is not a number of sessions (at least 4)\n", s)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	l := &loadTest{chunks: *chunks, interval: *interval, retention: *retention, timeout: *levelTimeout, previous: *previous}
	results, err := l.run(ns, *baselineMax)
	fmt.Println(table(results))
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

type loadTest struct {
	chunks    int
	interval  time.Duration
	retention time.Duration
	timeout   time.Duration
	bin       string // the loadworker binary
	previous  string // -previous: the commit whose loadworker runs beside the current one
	prevBin   string // its binary
	dir       string // logs, redis dir
	srv       *devserver.Server
}

// result is one level of one variant.
type result struct {
	Variant string `json:"variant"` // "redis" (2 workers, 2 API processes) or "memory" (one process)
	// Build is "current", or "previous" for the processes built from -previous.
	Build    string  `json:"build"`
	Commit   string  `json:"commit,omitempty"` // -previous, for the previous build
	Sessions int     `json:"sessions"`
	Chunks   int     `json:"chunks"`
	Interval string  `json:"interval"`
	Seconds  float64 `json:"seconds"` // first request sent → last session done
	TurnsPS  float64 `json:"turnsPerSecond"`
	// Latency of provider delta → client, over every delta of every session (ms).
	P50 float64 `json:"p50ms"`
	P99 float64 `json:"p99ms"`
	Max float64 `json:"maxms"`
	// Latency of a chat request's start: request sent → response headers (the turn started,
	// the session's update done), over every request (ms).
	StartP50 float64 `json:"startP50ms"`
	StartP99 float64 `json:"startP99ms"`
	StartMax float64 `json:"startMaxms"`
	// Latency of a turn's first text: request sent → its first text delta read, over every
	// request that streamed text (ms).
	FirstP50 float64 `json:"firstDeltaP50ms"`
	FirstP99 float64 `json:"firstDeltaP99ms"`
	// Over1s counts the deltas that took more than a second (of Deltas, every delta read).
	Over1s int `json:"over1s"`
	Deltas int `json:"deltas"`
	// PeakOpen is the largest number of streams open at one sample (every 250 ms).
	PeakOpen int `json:"peakOpen"`
	// APIRSSBaseMB is the API processes' VmRSS summed before the sessions; APIRSSPerStreamKB is
	// (the largest sum sampled − base) ÷ PeakOpen.
	APIRSSBaseMB      float64 `json:"apiRssBaseMB"`
	APIRSSPeakMB      float64 `json:"apiRssPeakMB"`
	APIRSSPerStreamKB float64 `json:"apiRssPerStreamKB"`
	// Redis used_memory before the sessions (MB), then per session of the level (KB, minus
	// that base): the largest sampled while they ran, once every session is done, and after
	// the retention has passed.
	RedisBaseMB        float64 `json:"redisBaseMB,omitempty"`
	RedisLivePerKB     float64 `json:"redisLivePerSessionKB,omitempty"`
	RedisDonePerKB     float64 `json:"redisDonePerSessionKB,omitempty"`
	RedisRetainedPerKB float64 `json:"redisAfterRetentionPerSessionKB,omitempty"`
	RedisKeysAfter     int64   `json:"redisKeysAfterRetention,omitempty"`
	// CPUms is CPU time (utime + stime) per turn in ms, by role: worker, api (the two of each
	// summed; "all" for the one process of the memory variant), redis, temporal (the dev
	// server), client (this program). CPUPct is each role's CPU ÷ wall time (100 = one core).
	CPUms  map[string]float64 `json:"cpuMsPerTurn"`
	CPUPct map[string]float64 `json:"cpuPct"`
	Errors int                `json:"errors"`
	// FirstErrors are up to five error messages.
	FirstErrors []string `json:"firstErrors,omitempty"`
}

func (l *loadTest) run(levels []int, baselineMax int) ([]result, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	if l.dir, err = os.MkdirTemp("", "kortyx-load-"); err != nil {
		return nil, err
	}
	failed := false // keep the processes' logs of a run with errors
	defer func() {
		if failed {
			fmt.Fprintln(os.Stderr, "load: the processes' logs are kept in", l.dir)
			return
		}
		_ = os.RemoveAll(l.dir)
	}()
	l.bin = filepath.Join(l.dir, "loadworker")
	build := exec.Command("go", "build", "-o", l.bin, "./bench/cmd/loadworker")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building loadworker: %v\n%s", err, out)
	}
	if l.previous != "" {
		if l.prevBin, err = buildAt(root, l.previous, l.dir); err != nil {
			return nil, err
		}
	}
	cli, err := devserver.Find(root)
	if err != nil {
		return nil, fmt.Errorf("the load test needs the Temporal CLI: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	l.srv, err = devserver.Start(ctx, devserver.Options{BinaryPath: cli, UIPort: -1, SearchAttributes: protocol.SearchAttributeNames()})
	cancel()
	if err != nil {
		return nil, err
	}
	defer func() { _ = l.srv.Stop() }()
	var out []result
	var errs []error
	for _, n := range levels {
		type variant struct{ name, build string }
		variants := []variant{{"redis", "current"}}
		if l.prevBin != "" {
			variants = append([]variant{{"redis", "previous"}}, variants...)
		}
		if n <= baselineMax {
			variants = append(variants, variant{"memory", "current"})
		}
		// The Redis variant's wait for the retention (its last reading) overlaps the
		// next variant: only redis-server is left running then, idle but for its expiry.
		var level []result
		var pending []func(*result)
		for _, v := range variants {
			bin := l.bin
			if v.build == "previous" {
				bin = l.prevBin
			}
			r, afterRetention, err := l.level(v.name, bin, n)
			if err != nil {
				for i, f := range pending {
					f(&level[i])
				}
				failed = true
				return out, fmt.Errorf("%s (%s build) level %d: %w", v.name, v.build, n, err)
			}
			r.Build = v.build
			if v.build == "previous" {
				r.Commit = l.previous
			}
			level = append(level, r)
			pending = append(pending, afterRetention)
		}
		for i, r := range level {
			if pending[i] != nil {
				pending[i](&r)
			}
			j, _ := json.Marshal(r)
			fmt.Println("Load " + string(j))
			out = append(out, r)
			if r.Errors > 0 {
				errs = append(errs, fmt.Errorf("%s level %d: %d errors, first: %v", r.Variant, n, r.Errors, r.FirstErrors))
			}
		}
	}
	failed = len(errs) > 0
	return out, errors.Join(errs...)
}

// proc is a started process of the level.
type proc struct {
	role string
	cmd  *exec.Cmd
	addr string // its HTTP (API) or health (worker) address
	done chan struct{}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (l *loadTest) start(role, bin string, env []string, args ...string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p := &proc{role: role, addr: addr, done: make(chan struct{})}
	name := args
	switch role {
	case "redis":
		p.cmd = exec.Command(name[0], append(name[1:], "--port", addr[strings.LastIndexByte(addr, ':')+1:])...)
	default:
		p.cmd = exec.Command(bin, args...)
		if role == "worker" {
			env = append(env, "KORTYX_HEALTH_ADDR="+addr)
		} else {
			env = append(env, "KORTYX_HTTP_ADDR="+addr)
		}
	}
	p.cmd.Env = append(os.Environ(), env...)
	logf, err := os.Create(filepath.Join(l.dir, fmt.Sprintf("%s-%s.log", role, strings.ReplaceAll(addr, ":", "_"))))
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.done) }()
	deadline := time.Now().Add(time.Minute)
	for {
		var ready bool
		if role == "redis" {
			c := redis.NewClient(&redis.Options{Addr: addr})
			ready = c.Ping(context.Background()).Err() == nil
			_ = c.Close()
		} else {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err == nil {
				ready = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
		}
		if ready {
			return p, nil
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("%s exited at start:\n%s", role, log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("%s not ready within a minute:\n%s", role, log)
		}
	}
}

// level runs n sessions on a fresh set of processes of variant and stops them. For the redis
// variant it keeps redis-server and returns afterRetention (else nil), which waits until the
// stream retention has passed since the sessions ended, adds the Redis figures read then to a
// result, and stops redis-server: the run keys expire in Redis itself (PEXPIRE when a run's
// final done is stored), so the worker and API processes are not needed for it, and the wait
// can overlap the next variant.
func (l *loadTest) level(variant, bin string, n int) (_ result, afterRetention func(*result), _ error) {
	r := result{Variant: variant, Sessions: n, Chunks: l.chunks, Interval: l.interval.String(),
		CPUms: map[string]float64{}, CPUPct: map[string]float64{}}
	queue := "kortyx-load-" + uuid.NewString()
	env := []string{"TEMPORAL_ADDRESS=" + l.srv.Address(), "KORTYX_TASK_QUEUE=" + queue,
		"KORTYX_BENCH_CHUNKS=" + strconv.Itoa(l.chunks), "KORTYX_BENCH_CHUNK_INTERVAL=" + l.interval.String(),
		"KORTYX_FAKE_MODELS=1", "KORTYX_LOG_LEVEL=warn", "KORTYX_STREAM_RETENTION=" + l.retention.String()}
	var procs []*proc
	var kept *proc // redis-server, handed to afterRetention
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			if procs[i] != kept {
				procs[i].stop()
			}
		}
	}()
	add := func(role string, env []string, args ...string) (*proc, error) {
		p, err := l.start(role, bin, env, args...)
		if err == nil {
			procs = append(procs, p)
		}
		return p, err
	}
	var apis []*proc
	var rdb *redis.Client
	var rp *proc
	if variant == "redis" {
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			return r, nil, fmt.Errorf("the load test needs redis-server: %w", err)
		}
		rp, err = add("redis", nil, bin, "--bind", "127.0.0.1", "--dir", l.dir, "--save", "", "--appendonly", "no", "--daemonize", "no")
		if err != nil {
			return r, nil, err
		}
		rdb = redis.NewClient(&redis.Options{Addr: rp.addr})
		defer func() {
			if kept == nil {
				_ = rdb.Close()
			}
		}()
		env = append(env, "KORTYX_REDIS_URL=redis://"+rp.addr+"/0")
		for range 2 {
			if _, err := add("worker", env); err != nil {
				return r, nil, err
			}
		}
		for range 2 {
			p, err := add("api", env, "--api-only")
			if err != nil {
				return r, nil, err
			}
			apis = append(apis, p)
		}
	} else {
		p, err := add("all", append(env, "KORTYX_STREAM_MAX_RUNS="+strconv.Itoa(4*n+256)))
		if err != nil {
			return r, nil, err
		}
		apis = append(apis, p)
	}
	// Warm up: two sessions per API process at once (one with the approval), outside the
	// measurement.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, DisableCompression: true}}
	warm := make([]sessionResult, 2*len(apis))
	var wwg sync.WaitGroup
	for i := range warm {
		wwg.Go(func() { warm[i] = l.session(client, apis[i%len(apis)].addr, i < len(apis), new(atomic.Int64)) })
	}
	wwg.Wait()
	for _, s := range warm {
		if s.err != nil {
			return r, nil, fmt.Errorf("warm-up session: %w", s.err)
		}
	}
	time.Sleep(time.Second)
	rss0 := sumRSS(apis)
	r.APIRSSBaseMB = float64(rss0) / 1e6
	var redis0 int64
	if rdb != nil {
		redis0 = redisMemory(rdb)
		r.RedisBaseMB = float64(redis0) / 1e6
	}
	cpu0 := cpuTicks(procs, l.srv.PID())

	var open atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	var peakRSS, peakRedis int64
	go func() { // the largest figures of the samples
		defer close(sampled)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
			r.PeakOpen = max(r.PeakOpen, int(open.Load()))
			peakRSS = max(peakRSS, sumRSS(apis))
			if rdb != nil {
				peakRedis = max(peakRedis, redisMemory(rdb))
			}
		}
	}()
	sessions := make([]sessionResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			sessions[i] = l.session(client, apis[i%len(apis)].addr, i%4 == 0, &open)
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	close(stopSampling)
	<-sampled
	cpu1 := cpuTicks(procs, l.srv.PID())

	r.Seconds = wall.Seconds()
	r.TurnsPS = float64(n) / wall.Seconds()
	var lat, starts, firsts []float64
	for _, s := range sessions {
		lat = append(lat, s.latencies...)
		starts = append(starts, s.starts...)
		firsts = append(firsts, s.firsts...)
		if s.err != nil {
			r.Errors++
			if len(r.FirstErrors) < 5 {
				r.FirstErrors = append(r.FirstErrors, s.err.Error())
			}
		}
	}
	slices.Sort(lat)
	r.P50, r.P99 = quantile(lat, 0.5), quantile(lat, 0.99)
	if len(lat) > 0 {
		r.Max = round2(lat[len(lat)-1])
	}
	r.Deltas = len(lat)
	slices.Sort(starts)
	r.StartP50, r.StartP99 = quantile(starts, 0.5), quantile(starts, 0.99)
	if len(starts) > 0 {
		r.StartMax = round2(starts[len(starts)-1])
	}
	slices.Sort(firsts)
	r.FirstP50, r.FirstP99 = quantile(firsts, 0.5), quantile(firsts, 0.99)
	for _, v := range lat {
		if v > 1000 {
			r.Over1s++
		}
	}
	r.APIRSSPeakMB = float64(peakRSS) / 1e6
	if r.PeakOpen > 0 {
		r.APIRSSPerStreamKB = float64(peakRSS-rss0) / 1024 / float64(r.PeakOpen)
	}
	if rdb != nil {
		r.RedisLivePerKB = float64(peakRedis-redis0) / 1024 / float64(n)
	}
	for role, ticks := range cpu1 {
		d := float64(ticks-cpu0[role]) * 10 // ms, at 100 ticks per second
		r.CPUms[role] = round2(d / float64(n))
		r.CPUPct[role] = round2(100 * d / 1000 / wall.Seconds())
	}
	if rdb == nil {
		return r, nil, nil
	}
	r.RedisDonePerKB = float64(redisMemory(rdb)-redis0) / 1024 / float64(n)
	kept = rp
	due := time.Now().Add(l.retention + 3*time.Second)
	return r, func(r *result) {
		time.Sleep(time.Until(due))
		r.RedisRetainedPerKB = float64(redisMemory(rdb)-redis0) / 1024 / float64(n)
		r.RedisKeysAfter, _ = rdb.DBSize(context.Background()).Result()
		_ = rdb.Close()
		rp.stop()
	}, nil
}

// sessionResult is one session's outcome.
type sessionResult struct {
	latencies []float64 // ms, one per delta
	starts    []float64 // ms, request → response headers, one per request
	firsts    []float64 // ms, request → first text delta, one per request that streamed text
	err       error
}

// session runs one chat session: the prompt (with approve: the question, then its answer) and
// the streamed answer, counting the stream open while it reads it.
func (l *loadTest) session(c *http.Client, addr string, approve bool, open *atomic.Int64) sessionResult {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	id := uuid.NewString()
	prompt := "tell me a long story"
	if approve {
		prompt = "please approve, then tell me a long story"
	}
	msgs := []kortyxwire.Message{{Role: "user", Content: prompt}}
	var res sessionResult
	for round := 0; round < 2; round++ {
		ask, n, err := l.post(ctx, c, addr, id, msgs, open, &res)
		if err != nil {
			res.err = fmt.Errorf("session %s, request %d of %d: %w", id, round+1, 1+btoi(approve), err)
			return res
		}
		if ask == nil {
			if n != l.chunks {
				res.err = fmt.Errorf("session %s: %d of %d deltas reached the client", id, n, l.chunks)
			}
			return res
		}
		if !approve || round > 0 {
			res.err = fmt.Errorf("session %s: an unexpected question", id)
			return res
		}
		msgs = append(msgs, kortyxwire.Message{Role: "assistant", Content: ""}, kortyxwire.Answer(ask, []string{"approve"}, ""))
	}
	res.err = fmt.Errorf("session %s: no answer after the approval", id)
	return res
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// post sends one chat request and reads its response to done: the question it asked (nil if
// none) and the number of timestamped deltas, whose latencies it appends to lat (and the time
// to the response headers to starts, and to its first delta to firsts). An error says when it
// came: how long after the request, its response headers and its first event.
func (l *loadTest) post(ctx context.Context, c *http.Client, addr, session string, msgs []kortyxwire.Message, open *atomic.Int64, res *sessionResult) (ask kortyxwire.Chunk, n int, err error) {
	lat, starts := &res.latencies, &res.starts
	t0 := time.Now()
	var headers, first time.Duration
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (%.1f s after the request; headers after %.1f s, first event after %.1f s, %d deltas read)",
				err, time.Since(t0).Seconds(), headers.Seconds(), first.Seconds(), n)
		}
	}()
	body, _ := json.Marshal(map[string]any{"sessionId": session, "workflowId": "bench-load", "messages": msgs, "context": map[string]any{}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("content-type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	headers = time.Since(t0)
	*starts = append(*starts, float64(headers)/1e6)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	open.Add(1)
	defer open.Add(-1)
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return ask, n, fmt.Errorf("the stream ended before done: %w", err)
		}
		payload, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
		if !ok {
			continue
		}
		now := time.Now().UnixNano()
		if first == 0 {
			first = time.Since(t0)
		}
		if strings.TrimSpace(payload) == "[DONE]" {
			return ask, n, errors.New("[DONE] before a done chunk")
		}
		var ch kortyxwire.Chunk
		if err := json.Unmarshal([]byte(payload), &ch); err != nil {
			return ask, n, fmt.Errorf("a malformed event %q: %w", payload, err)
		}
		switch ch.Type() {
		case "text-delta":
			if n == 0 {
				res.firsts = append(res.firsts, float64(now-t0.UnixNano())/1e6)
			}
			for _, f := range strings.Fields(ch.String("delta")) {
				sent, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					return ask, n, fmt.Errorf("a delta that is not a timestamp: %q", f)
				}
				*lat = append(*lat, float64(now-sent)/1e6)
				n++
			}
		case "interrupt":
			ask = ch
		case "error":
			return ask, n, fmt.Errorf("an error chunk: %s", ch.String("message"))
		case "done":
			return ask, n, nil
		}
	}
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return round2(sorted[i])
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// sumRSS is the processes' VmRSS summed, in bytes.
func sumRSS(ps []*proc) int64 {
	var sum int64
	for _, p := range ps {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				sum += kb << 10
			}
		}
	}
	return sum
}

// cpuTicks is utime + stime (clock ticks) by role: the processes of the level, the dev server
// and this program.
func cpuTicks(ps []*proc, temporal int) map[string]int64 {
	out := map[string]int64{"temporal": proccpu.Ticks(temporal), "client": proccpu.Ticks(os.Getpid())}
	for _, p := range ps {
		out[p.role] += proccpu.Ticks(p.pid())
	}
	return out
}

func redisMemory(c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String(), nil
}

func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

// table is the results as a markdown table.
func table(rs []result) string {
	var b strings.Builder
	b.WriteString("| Sessions | Variant | Build | Turns/s | p50 ms | p99 ms | start p50/p99 ms | first delta p50/p99 ms | Peak open | API RSS/stream KB | Redis live KB/stream | Redis after retention KB/session | CPU ms/turn worker | api | redis | temporal | Errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		worker, api := r.CPUms["worker"], r.CPUms["api"]
		if r.Variant == "memory" {
			worker, api = r.CPUms["all"], r.CPUms["all"]
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %.1f | %.2f | %.2f | %.0f / %.0f | %.0f / %.0f | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d |\n",
			r.Sessions, r.Variant, r.Build, r.TurnsPS, r.P50, r.P99, r.StartP50, r.StartP99, r.FirstP50, r.FirstP99, r.PeakOpen, r.APIRSSPerStreamKB, r.RedisLivePerKB, r.RedisRetainedPerKB,
			worker, api, r.CPUms["redis"], r.CPUms["temporal"], r.Errors)
	}
	return b.String()
}

// buildAt builds the loadworker of the module as it was at commit rev, from the checkout's git
// history (the module cache serves its dependencies), under dir.
func buildAt(root, rev, dir string) (string, error) {
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", rev+"^{commit}").CombinedOutput(); err != nil {
		return "", fmt.Errorf("-previous %s: not a commit of the checkout's history (a shallow clone?): %v %s", rev, err, out)
	}
	src := filepath.Join(dir, "previous")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", rev)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("git archive %s: %w", rev, err)
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("unpacking %s: %w", rev, err)
	}
	bin := filepath.Join(dir, "loadworker-previous")
	build := exec.Command("go", "build", "-o", bin, "./bench/cmd/loadworker")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building loadworker at %s: %v\n%s", rev, err, out)
	}
	return bin, nil
}
