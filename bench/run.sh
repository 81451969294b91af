#!/usr/bin/env bash
# Regenerates the numbers of docs/performance.md in one run (make bench): the Go benchmarks of
# this package against fresh tuned dev servers (one per go test invocation), then the LangGraph
# JS peer (npm ci into bench/peers/langgraph first when node_modules is missing or older than
# package-lock.json), then the summary table (bench/cmd/report). Raw outputs and the summary go
# to $1 (default bench/results, git-ignored); the summary is also printed.
#
#	bench/run.sh [results-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench/results}"
mkdir -p "$out"
rm -f "$out"/go-*.txt "$out"/peer.json "$out"/peer.err "$out"/summary.md

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
	go test ./bench/ -run '^$' -timeout 30m "$@" 2>&1 | tee "$out/go-$name.txt"
}

# Time per run (step workloads, interrupts, tool loops, first token, and whatever else the
# package adds later): 20 iterations, 3 repetitions.
run steps -bench . -skip 'HistoryGrowth|Throughput|WorkerRSS|WaitingRunMemory|ToolLoop50' -benchtime 20x -count 3
run loop50 -bench 'ToolLoop50' -benchtime 5x -count 3
run history -bench 'HistoryGrowth' -benchtime 1x -count 1
run throughput -bench 'Throughput' -benchtime 1x -count 3
# Worker RSS per waiting run (the in-process BenchmarkWaitingRunMemory is left out: about
# 2.5 minutes here, and the worker-process RSS is the figure the table reports).
run memory -bench 'WorkerRSS' -benchtime 1x -count 1

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
if peer_run 2> >(tee "$out/peer.err" >&2); then
	peer_flag=(-peer "$out/peer.json")
	cat "$out/peer.json"
else
	echo "the LangGraph peer failed (see $out/peer.err); the summary has no LangGraph columns" >&2
fi

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" | tee -a "$out/machine.txt"
go run ./bench/cmd/report "${peer_flag[@]}" "$out"/go-*.txt >"$out/summary.md"
cat "$out/summary.md"
