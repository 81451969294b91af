// Command report turns the raw output of bench/run.sh (Go benchmark output files and the
// LangGraph peer's JSON) into the markdown summary quoted by docs/performance.md: every metric
// with min/median/max over its repetitions, the ratios Kortyx/plain and Kortyx/LangGraph of
// medians from the same run, the history, throughput and worker RSS tables.
//
//	go run ./bench/cmd/report [-peer peer.json] go-output.txt...
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	peer := flag.String("peer", "", "the LangGraph peer's JSON output (optional)")
	flag.Parse()
	r := &results{metrics: map[string]map[string][]float64{}}
	for _, f := range flag.Args() {
		if err := r.readGo(f); err != nil {
			fail(err)
		}
	}
	if *peer != "" {
		b, err := os.ReadFile(*peer)
		if err != nil {
			fail(err)
		}
		if err := json.Unmarshal(b, &r.peer); err != nil {
			fail(fmt.Errorf("%s: %w", *peer, err))
		}
	}
	r.write(os.Stdout)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "report:", err)
	os.Exit(1)
}

// peerResult is the JSON bench/peers/langgraph/bench.mjs prints.
type peerResult struct {
	Node     string            `json:"node"`
	Versions map[string]string `json:"versions"`
	Steps    int               `json:"steps"`
	Count    int               `json:"count"`
	Variants []struct {
		Checkpointer   string    `json:"checkpointer"`
		MsPerStep      []float64 `json:"msPerStep"`
		MsPerRoundTrip []float64 `json:"msPerRoundTrip"`
		MsToDone       []float64 `json:"msToDone"`
	} `json:"variants"`
}

type results struct {
	names   []string                        // benchmark names in order of appearance
	metrics map[string]map[string][]float64 // name → unit → one value per repetition
	units   map[string][]string             // name → units in order
	history []map[string]any
	rss     []map[string]any
	actions []map[string]any // "Actions {json}" lines of BenchmarkActionsPerTurn
	load    []map[string]any // "Load {json}" lines of bench/cmd/load
	cold    []map[string]any // "ColdBuild {json}" lines of bench/run.sh
	peer    peerResult
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)

// splitName is a benchmark's name followed by what it printed; splitResult the iterations
// and metrics that follow on a line of their own.
var (
	splitName   = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+[A-Za-z]`)
	splitResult = regexp.MustCompile(`^\s+\d+\s+(.+ ns/op.*)$`)
)

func (r *results) readGo(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if r.units == nil {
		r.units = map[string][]string{}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var pending string
	for sc.Scan() {
		line := sc.Text()
		for prefix, dst := range map[string]*[]map[string]any{"History ": &r.history, "RSS ": &r.rss,
			"Actions ": &r.actions, "Load ": &r.load, "ColdBuild ": &r.cold} {
			if j, ok := strings.CutPrefix(line, prefix); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(j), &m); err != nil {
					return fmt.Errorf("%s: %q: %w", file, line, err)
				}
				*dst = append(*dst, m)
			}
		}
		// A benchmark that prints while it runs (BenchmarkLocalToolStep's Ratio lines) splits
		// its result: the name first, then the printed lines, then the iterations and metrics.
		if m := splitName.FindStringSubmatch(line); m != nil {
			pending = m[1]
			continue
		}
		var name string
		var fields []string
		if m := benchLine.FindStringSubmatch(line); m != nil {
			name, fields = m[1], strings.Fields(m[2])
		} else if m := splitResult.FindStringSubmatch(line); m != nil && pending != "" {
			name, fields = pending, strings.Fields(m[1])
			pending = ""
		} else {
			continue
		}
		if r.metrics[name] == nil {
			r.metrics[name] = map[string][]float64{}
			r.names = append(r.names, name)
		}
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			unit := fields[i+1]
			if _, seen := r.metrics[name][unit]; !seen {
				r.units[name] = append(r.units[name], unit)
			}
			r.metrics[name][unit] = append(r.metrics[name][unit], v)
		}
	}
	return sc.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func num(v float64) string {
	switch a := max(v, -v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// mmm is "median (min–max)" of v.
func mmm(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	if len(v) == 1 {
		return num(v[0])
	}
	return fmt.Sprintf("%s (%s–%s)", num(median(v)), num(slices.Min(v)), num(slices.Max(v)))
}

// preferredUnits are the units ratios are computed on, in order of preference.
var preferredUnits = []string{"ms/roundtrip", "ms/step", "ms/node", "ms/start-to-token"}

// mainUnit is the unit a benchmark's ratio is computed on: the first of preferredUnits it
// reports, else its first ms/ or us/ metric.
func (r *results) mainUnit(name string) string {
	for _, u := range preferredUnits {
		if slices.Contains(r.units[name], u) {
			return u
		}
	}
	for _, u := range r.units[name] {
		if strings.HasPrefix(u, "ms/") || strings.HasPrefix(u, "us/") {
			return u
		}
	}
	return ""
}

func (r *results) write(w io.Writer) {
	fmt.Fprintln(w, "## Kortyx / plain Temporal (medians of the repetitions, one run)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Benchmark | Unit | Kortyx median (min–max) | Plain median (min–max) | n | Kortyx/plain |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, name := range r.names {
		base, ok := strings.CutSuffix(name, "/kortyx")
		if !ok {
			continue
		}
		plain := base + "/plain"
		unit := r.mainUnit(name)
		k, p := r.metrics[name][unit], r.metrics[plain][unit]
		if unit == "" || len(p) == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d / %d | %.2f |\n", strings.TrimPrefix(base, "Benchmark"), unit, mmm(k), mmm(p), len(k), len(p), median(k)/median(p))
	}
	fmt.Fprintln(w)
	r.writePeer(w)
	r.writeLocalTool(w)
	r.writeThroughput(w)
	r.writeHistory(w)
	r.writeRSS(w)
	r.writeActions(w)
	r.writeLoad(w)
	r.writeCold(w)
	fmt.Fprintln(w, "## Every metric (history rows: see the history table)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Benchmark | Unit | median (min–max) | n |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, name := range r.names {
		if strings.HasPrefix(name, "BenchmarkHistoryGrowth/") {
			continue
		}
		for _, u := range r.units[name] {
			if u == "ns/op" {
				continue
			}
			v := r.metrics[name][u]
			fmt.Fprintf(w, "| %s | %s | %s | %d |\n", strings.TrimPrefix(name, "Benchmark"), u, mmm(v), len(v))
		}
	}
	fmt.Fprintln(w)
}

func (r *results) writePeer(w io.Writer) {
	if len(r.peer.Variants) == 0 {
		return
	}
	fmt.Fprintf(w, "## Kortyx / LangGraph JS (node %s, @langchain/langgraph %s, checkpoint-sqlite %s; medians of %d repetitions)\n\n",
		r.peer.Node, r.peer.Versions["@langchain/langgraph"], r.peer.Versions["@langchain/langgraph-checkpoint-sqlite"], r.peer.Count)
	rows := []struct {
		what, kortyx, plain, unit string
		peer                      func(i int) []float64
	}{
		{"50-step tool loop, ms/step", "BenchmarkToolLoop50/kortyx", "BenchmarkToolLoop50/plain", "ms/step", func(i int) []float64 { return r.peer.Variants[i].MsPerStep }},
		{"answer → next chunk by signal, ms", "BenchmarkInterruptRoundTrip/signal/kortyx", "BenchmarkInterruptRoundTrip/signal/plain", "ms/roundtrip", func(i int) []float64 { return r.peer.Variants[i].MsPerRoundTrip }},
		{"answer → next chunk by update, ms", "BenchmarkInterruptRoundTrip/update/kortyx", "BenchmarkInterruptRoundTrip/update/plain", "ms/roundtrip", func(i int) []float64 { return r.peer.Variants[i].MsPerRoundTrip }},
		// The fast path (model passes as local activities; docs/reason.md#fast-path): no plain
		// column, its own regular-path twin is in the per-benchmark table.
		{"50-step tool loop, fast path, ms/step", "BenchmarkFastPathToolLoop50/fast", "", "ms/step", func(i int) []float64 { return r.peer.Variants[i].MsPerStep }},
		{"50-step tool loop, fast path with a local tool, ms/step", "BenchmarkFastPathToolLoop50/fast-local-tool", "", "ms/step", func(i int) []float64 { return r.peer.Variants[i].MsPerStep }},
		{"answer → next chunk by signal, fast path, ms", "BenchmarkFastPathAnswerToChunk/signal/fast", "", "ms/roundtrip", func(i int) []float64 { return r.peer.Variants[i].MsPerRoundTrip }},
		{"answer → next chunk by update, fast path, ms", "BenchmarkFastPathAnswerToChunk/update/fast", "", "ms/roundtrip", func(i int) []float64 { return r.peer.Variants[i].MsPerRoundTrip }},
	}
	fmt.Fprintln(w, "| Workload | Kortyx | Plain Temporal | LangGraph checkpointer | LangGraph | Kortyx/LangGraph | Plain/LangGraph |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, row := range rows {
		k, p := r.metrics[row.kortyx][row.unit], r.metrics[row.plain][row.unit]
		if len(k) == 0 {
			continue // a benchmark this run did not have
		}
		for i, v := range r.peer.Variants {
			lg := row.peer(i)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", row.what, mmm(k), mmm(p), v.Checkpointer, mmm(lg), ratioText(k, lg), ratioText(p, lg))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "LangGraph's round trip: `graph.stream(new Command({resume}), {streamMode: \"custom\"})` → its first chunk; to the end of the resumed run (ms):")
	for _, v := range r.peer.Variants {
		fmt.Fprintf(w, " %s %s;", v.Checkpointer, mmm(v.MsToDone))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
}

// ratioText is ratio(a, b) with two decimals, "—" when either side is missing.
func ratioText(a, b []float64) string {
	if x := ratio(a, b); x != 0 {
		return fmt.Sprintf("%.2f", x)
	}
	return "—"
}

func ratio(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 || median(b) == 0 {
		return 0
	}
	return median(a) / median(b)
}

func (r *results) writeThroughput(w io.Writer) {
	var names []string
	for _, n := range r.names {
		if strings.HasPrefix(n, "BenchmarkThroughput/") {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	fmt.Fprintln(w, "## Throughput: runs completed per second, 3-step agent (three no-op activity nodes)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| In flight | Kortyx runs/s | Plain runs/s | Kortyx/plain (median of per-iteration ratios) | n |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, n := range names {
		m := r.metrics[n]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d |\n", strings.TrimPrefix(n, "BenchmarkThroughput/c="), mmm(m["kortyx-runs/s"]), mmm(m["plain-runs/s"]),
			num(median(m["kortyx/plain"])), len(m["kortyx/plain"]))
	}
	fmt.Fprintln(w)
}

func get(m map[string]any, k string) float64 {
	v, _ := m[k].(float64)
	return v
}

func (r *results) writeHistory(w io.Writer) {
	if len(r.history) == 0 {
		return
	}
	fmt.Fprintln(w, "## History per tool-loop run (one run each)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Config | Steps × result | Status | Steps done | Events | History bytes | Temporal's historySizeBytes | Step 1 bytes | Last step bytes | Unique bytes | History/unique | Largest event | Store payloads / bytes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, h := range r.history {
		status, _ := h["status"].(string)
		largest, _ := h["largestType"].(string)
		fmt.Fprintf(w, "| %s | %d × %d KB | %s | %d | %d | %d | %d | %d | %d | %d | %.2f | %d (%s) | %d / %d |\n",
			h["config"], int(get(h, "steps")), int(get(h, "bytes"))>>10, status, int(get(h, "tools")), int(get(h, "events")),
			int64(get(h, "historyBytes")), int64(get(h, "temporalBytes")), int64(get(h, "firstStep")), int64(get(h, "lastStep")),
			int64(get(h, "unique")), get(h, "ratio"), int64(get(h, "largestEvent")), largest, int(get(h, "storePayloads")), int64(get(h, "storeBytes")))
	}
	fmt.Fprintln(w)
	for _, h := range r.history {
		if e, _ := h["error"].(string); e != "" {
			fmt.Fprintf(w, "- %s %d × %d KB: %s\n", h["config"], int(get(h, "steps")), int(get(h, "bytes"))>>10, e)
		}
	}
	fmt.Fprintln(w)
}

func (r *results) writeRSS(w io.Writer) {
	if len(r.rss) == 0 {
		return
	}
	fmt.Fprintln(w, "## Worker RSS per waiting run (worker in its own process)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Variant | Sticky cache | Runs | Idle RSS MB | KB/run, all waiting | KB/run after GC + FreeOSMemory |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, s := range r.rss {
		idle, runs := get(s, "idle"), get(s, "runs")
		cache := "default (10,000)"
		if c := int(get(s, "stickyCache")); c > 0 {
			cache = strconv.Itoa(c)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.1f | %.1f | %.1f |\n", s["variant"], cache, int(runs), idle/(1<<20),
			(get(s, "waiting")-idle)/runs/1024, (get(s, "freed")-idle)/runs/1024)
	}
	fmt.Fprintln(w)
}

// writeLocalTool is the table of BenchmarkLocalToolStep: ms per step of each variant and the
// medians of its paired ratios (each repetition's ratio is the median over its paired runs).
func (r *results) writeLocalTool(w io.Writer) {
	m := r.metrics["BenchmarkLocalToolStep"]
	if m == nil {
		return
	}
	fmt.Fprintln(w, "## Tool-loop step: local tool, regular tool, model pass alone (BenchmarkLocalToolStep, paired runs)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Variant | ms/step median (min–max) | events/run | n |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, v := range []string{"kortyx-local", "kortyx-regular", "plain-local", "plain-regular", "model-only"} {
		ms := m["ms/step-"+v]
		fmt.Fprintf(w, "| %s | %s | %s | %d |\n", v, mmm(ms), mmm(m["events/run-"+v]), len(ms))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Ratio | median of the repetitions (min–max) |")
	fmt.Fprintln(w, "|---|---|")
	for _, u := range r.units["BenchmarkLocalToolStep"] {
		if x, ok := strings.CutPrefix(u, "x-"); ok {
			fmt.Fprintf(w, "| %s | %s |\n", x, mmm(m[u]))
		}
	}
	fmt.Fprintln(w)
}

// actionKinds are the columns of the actions table: JSON field and header.
var actionKinds = [][2]string{
	{"starts", "starts"}, {"children", "children (×2)"}, {"continueAsNew", "CAN"}, {"signals", "signals"},
	{"updates", "updates"}, {"queries", "queries"}, {"activities", "activity attempts"}, {"retries", "of which retries"},
	{"heartbeats", "heartbeats"}, {"timers", "timers"}, {"markerTasks", "marker tasks"}, {"upserts", "upserts"},
}

// writeActions writes the actions per turn: each scenario's variants side by side (Kortyx,
// plain or the floor by rule, and a fast-path column filled when a fast-path row exists).
func (r *results) writeActions(w io.Writer) {
	if len(r.actions) == 0 {
		return
	}
	fmt.Fprintln(w, "## Billable Temporal actions per turn (BenchmarkActionsPerTurn, one run)")
	fmt.Fprintln(w)
	head := "| Scenario | Variant | Total"
	sep := "|---|---|---"
	for _, k := range actionKinds {
		head += " | " + k[1]
		sep += "|---"
	}
	fmt.Fprintln(w, head+" | markers | workflow tasks | workflows |")
	fmt.Fprintln(w, sep+"|---|---|---|")
	for _, a := range r.actions {
		line := fmt.Sprintf("| %s | %s | **%d**", a["scenario"], a["variant"], int(get(a, "total")))
		for _, k := range actionKinds {
			line += fmt.Sprintf(" | %d", int(get(a, k[0])))
		}
		fmt.Fprintf(w, "%s | %d | %d | %d |\n", line, int(get(a, "markers")), int(get(a, "workflowTasks")), int(get(a, "workflows")))
	}
	fmt.Fprintln(w)
	// Totals side by side, with the fast path's column.
	type row struct{ kortyx, other, fast, fastLocal string }
	var order []string
	rows := map[string]*row{}
	for _, a := range r.actions {
		sc, _ := a["scenario"].(string)
		if rows[sc] == nil {
			rows[sc] = &row{kortyx: "—", other: "—", fast: "—", fastLocal: "—"}
			order = append(order, sc)
		}
		t := strconv.Itoa(int(get(a, "total")))
		switch a["variant"] {
		case "kortyx":
			rows[sc].kortyx = t
		case "plain":
			rows[sc].other = t + " (measured)"
		case "floor":
			rows[sc].other = t + " (floor by rule)"
		case "fastpath":
			rows[sc].fast = t
		case "fastpath-local":
			rows[sc].fastLocal = t
		}
	}
	fmt.Fprintln(w, "| Scenario | Kortyx | Hand-written Temporal | Kortyx fast path | fast path, local tool |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, sc := range order {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", sc, rows[sc].kortyx, rows[sc].other, rows[sc].fast, rows[sc].fastLocal)
	}
	fmt.Fprintln(w)
}

func (r *results) writeLoad(w io.Writer) {
	if len(r.load) == 0 {
		return
	}
	fmt.Fprintln(w, "## Load over Redis (bench/cmd/load, one run)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Sessions | Variant | Wall s | Turns/s | p50 ms | p99 ms | max ms | deltas > 1 s | turn start p50 / p99 / max ms | Peak open | API RSS base MB | API RSS KB/stream | Redis KB/session peak | Redis KB/session done | Redis KB/session after retention | CPU ms/turn: worker | api | redis | temporal | CPU %: worker | api | redis | temporal | Errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, l := range r.load {
		cpu, _ := l["cpuMsPerTurn"].(map[string]any)
		pct, _ := l["cpuPct"].(map[string]any)
		worker, api := get(cpu, "worker"), get(cpu, "api")
		pw, pa := get(pct, "worker"), get(pct, "api")
		if l["variant"] == "memory" { // one process does both
			worker, api, pw, pa = get(cpu, "all"), get(cpu, "all"), get(pct, "all"), get(pct, "all")
		}
		fmt.Fprintf(w, "| %d | %s | %.1f | %.1f | %.2f | %.2f | %.0f | %d | %.0f / %.0f / %.0f | %d | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f | %d |\n",
			int(get(l, "sessions")), l["variant"], get(l, "seconds"), get(l, "turnsPerSecond"), get(l, "p50ms"), get(l, "p99ms"), get(l, "maxms"),
			int(get(l, "over1s")), get(l, "startP50ms"), get(l, "startP99ms"), get(l, "startMaxms"), int(get(l, "peakOpen")), get(l, "apiRssBaseMB"), get(l, "apiRssPerStreamKB"),
			get(l, "redisLivePerSessionKB"), get(l, "redisDonePerSessionKB"), get(l, "redisAfterRetentionPerSessionKB"),
			worker, api, get(cpu, "redis"), get(cpu, "temporal"), pw, pa, get(pct, "redis"), get(pct, "temporal"), int(get(l, "errors")))
	}
	fmt.Fprintln(w)
	for _, l := range r.load {
		if errs, _ := l["firstErrors"].([]any); len(errs) > 0 {
			fmt.Fprintf(w, "- %s %d sessions: %v\n", l["variant"], int(get(l, "sessions")), errs)
		}
	}
	fmt.Fprintln(w)
}

func (r *results) writeCold(w io.Writer) {
	if len(r.cold) == 0 {
		return
	}
	fmt.Fprintln(w, "## Cold builds (empty GOCACHE, module cache kept)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Package | Seconds | Binary MB | Packages linked | of which provider SDK packages |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, c := range r.cold {
		pkg, _ := c["package"].(string)
		if tags, _ := c["tags"].(string); tags != "" {
			pkg += " -tags " + tags
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %d | %d |\n", pkg, get(c, "seconds"), get(c, "binaryBytes")/1e6,
			int(get(c, "packages")), int(get(c, "providerSdkPackages")))
	}
	fmt.Fprintln(w)
}
