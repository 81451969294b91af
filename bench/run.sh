#!/usr/bin/env bash
# Regenerates the numbers of docs/performance.md and docs/capacity.md in one run (make bench):
# the Go benchmarks of this package against fresh tuned dev servers (one per go test
# invocation), the actions per turn, the cold builds of ./starter and ./worker, the load test
# over Redis (bench/cmd/load), then the LangGraph JS peer (npm ci into bench/peers/langgraph
# first when node_modules is missing or older than package-lock.json), then the summary table
# (bench/cmd/report). Raw outputs and the summary go to $1 (default bench/results,
# git-ignored); the summary is also printed. KORTYX_BENCH_LOAD_LEVELS sets the load test's
# levels (default 100,300,1000). A load test with any error fails the run (exit 1) after the
# summary is written.
#
#	bench/run.sh [results-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench/results}"
mkdir -p "$out"
rm -f "$out"/go-*.txt "$out"/peer.json "$out"/peer.err "$out"/summary.md "$out"/stages.txt

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
	go version
	echo "nproc: $(nproc 2>/dev/null || echo unknown)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
	echo "node: $(node --version 2>/dev/null || echo missing)"
} | tee "$out/machine.txt"

# run NAME ARGS...: one go test invocation of the benchmarks, its output in go-NAME.txt.
run() {
	local name=$1
	shift
	echo "== go test ./bench/ -run '^\$' $*"
	stage_start "$name"
	go test ./bench/ -run '^$' -timeout 30m "$@" 2>&1 | tee "$out/go-$name.txt"
	stage_end
}

# stage_start NAME / stage_end: the wall time of each stage, in stages.txt.
stage_start() {
	stage_name=$1
	stage_t0=$(date +%s)
}
stage_end() {
	echo "$stage_name $(($(date +%s) - stage_t0))s" >>"$out/stages.txt"
}

# Time per run (step workloads, interrupts, tool loops, first token, and whatever else the
# package adds later): 20 iterations, 2 repetitions (3 before the actions, cold-build and load
# stages were added, to keep the whole run near 30 minutes on a shared 2-core machine).
# BenchmarkHostileSessions (about 850 chat turns, then waits of minutes for the memory to settle)
# runs on its own: docs/performance.md, "Memory after many sessions", has its command.
run steps -bench . -skip 'HistoryGrowth|Throughput|WorkerRSS|WaitingRunMemory|ToolLoop50|ActionsPerTurn|FinishedSessions|HostileSessions' -benchtime 20x -count 2
run loop50 -bench 'ToolLoop50' -benchtime 5x -count 2
# History per tool-loop run up to 50 steps (KORTYX_BENCH_HISTORY_MAX_STEPS; unset, the benchmark
# also runs 200 steps, three quarters of the stage's steps, left out to keep the run under 30
# minutes: docs/performance.md quotes the 200-step rows of the run that had them).
KORTYX_BENCH_HISTORY_MAX_STEPS=${KORTYX_BENCH_HISTORY_MAX_STEPS:-50} run history -bench 'HistoryGrowth' -benchtime 1x -count 1
run throughput -bench 'Throughput' -benchtime 1x -count 1
# Worker RSS per waiting run, 300 runs per row (1,000 before the load stage was added; the
# in-process BenchmarkWaitingRunMemory is left out: about
# 2.5 minutes here, and the worker-process RSS is the figure the table reports).
KORTYX_BENCH_WAITING=300 run memory -bench 'WorkerRSS' -benchtime 1x -count 1
# Billable Temporal actions of each example's turn (counts, not times: one repetition).
run actions -bench 'ActionsPerTurn' -benchtime 1x -count 1

# cold_build PKG [TAGS]: go build of PKG (with the build tags TAGS) from an empty build cache
# (the module cache is kept, and the modules PKG needs are downloaded first, untimed), timed;
# with the binary's size and the packages it links. One "ColdBuild {json}" line.
cold_build() {
	local pkg=$1 tags=${2:-} cache t0 t1
	go list -tags "$tags" -deps "$pkg" >/dev/null
	cache=$(mktemp -d)
	t0=$(date +%s.%N)
	GOCACHE=$cache go build -tags "$tags" -o "$cache/bin" "$pkg"
	t1=$(date +%s.%N)
	printf 'ColdBuild {"package":"%s","tags":"%s","seconds":%s,"binaryBytes":%s,"packages":%s,"providerSdkPackages":%s}\n' \
		"$pkg" "$tags" "$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")" "$(stat -c %s "$cache/bin")" \
		"$(go list -tags "$tags" -deps "$pkg" | wc -l)" \
		"$(go list -tags "$tags" -deps "$pkg" | grep -c -E '^(github.com/anthropics/|google.golang.org/genai|cloud.google.com/go/auth|github.com/google/s2a-go)' || true)"
	rm -rf "$cache"
}
echo "== cold builds (empty GOCACHE each, GOMODCACHE kept)"
stage_start coldbuild
{ cold_build ./starter; cold_build ./worker; cold_build ./worker kortyx_openaionly; } | tee "$out/go-coldbuild.txt"
stage_end

# The load test over Redis: real processes (redis-server, 2 workers, 2 --api-only, and the
# one-process baseline), see bench/cmd/load.
load_failed=0
echo "== go run ./bench/cmd/load -levels ${KORTYX_BENCH_LOAD_LEVELS:-100,300,1000}"
stage_start load
go run ./bench/cmd/load -levels "${KORTYX_BENCH_LOAD_LEVELS:-100,300,1000}" 2>&1 | tee "$out/go-load.txt" || load_failed=1
stage_end

peer=bench/peers/langgraph
peer_flag=()
# peer_run installs the peer's packages when needed and runs it, its JSON in peer.json.
peer_run() {
	if [ ! -d "$peer/node_modules" ] || [ "$peer/package-lock.json" -nt "$peer/node_modules/.package-lock.json" ]; then
		# better-sqlite3 compiles from source when its prebuilt binary cannot be downloaded;
		# node-gyp then needs the node headers, found locally when installed.
		if [ -d /usr/include/node ]; then export npm_config_nodedir=/usr; fi
		(cd "$peer" && npm ci --no-audit --no-fund) || return 1
	fi
	node "$peer/bench.mjs" --loop-iterations 5 --interrupt-iterations 20 --count 3 >"$out/peer.json" || return 1
}
echo "== LangGraph JS peer ($peer)"
stage_start peer
if peer_run 2> >(tee "$out/peer.err" >&2); then
	peer_flag=(-peer "$out/peer.json")
	cat "$out/peer.json"
else
	echo "the LangGraph peer failed (see $out/peer.err); the summary has no LangGraph columns" >&2
fi
stage_end

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" | tee -a "$out/machine.txt"
go run ./bench/cmd/report "${peer_flag[@]}" "$out"/go-*.txt >"$out/summary.md"
cat "$out/summary.md"
cat "$out/stages.txt"
if [ "$load_failed" != 0 ]; then
	echo "the load test failed (errors above, in $out/go-load.txt)" >&2
	exit 1
fi
