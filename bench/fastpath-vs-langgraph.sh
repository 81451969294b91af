#!/usr/bin/env bash
# The fast path beside the regular path, plain Temporal and the LangGraph JS peer, side by side
# in one run (a few minutes; make bench runs the same benchmarks among all the others):
# the 50-step tool loop (BenchmarkToolLoop50, BenchmarkFastPathToolLoop50) and answer → next
# chunk (BenchmarkInterruptRoundTrip, BenchmarkFastPathAnswerToChunk), then the peer, then the
# report's tables. Raw outputs and summary.md go to $1 (default bench/results-fastpath,
# git-ignored).
#
#	bench/fastpath-vs-langgraph.sh [results-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench/results-fastpath}"
mkdir -p "$out"
rm -f "$out"/go-*.txt "$out"/peer.json "$out"/summary.md
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "nproc: $(nproc 2>/dev/null || echo unknown)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
} | tee "$out/machine.txt"
go test ./bench/ -run '^$' -timeout 30m -bench 'BenchmarkToolLoop50|BenchmarkFastPathToolLoop50' -benchtime 5x -count 2 2>&1 | tee "$out/go-loop.txt"
go test ./bench/ -run '^$' -timeout 30m -bench 'BenchmarkInterruptRoundTrip|BenchmarkFastPathAnswerToChunk' -benchtime 20x -count 2 2>&1 | tee "$out/go-roundtrip.txt"
peer=bench/peers/langgraph
if [ ! -d "$peer/node_modules" ] || [ "$peer/package-lock.json" -nt "$peer/node_modules/.package-lock.json" ]; then
	if [ -d /usr/include/node ]; then export npm_config_nodedir=/usr; fi
	(cd "$peer" && npm ci --no-audit --no-fund)
fi
node "$peer/bench.mjs" --loop-iterations 5 --interrupt-iterations 20 --count 3 >"$out/peer.json"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" | tee -a "$out/machine.txt"
go run ./bench/cmd/report -peer "$out/peer.json" "$out"/go-*.txt >"$out/summary.md"
cat "$out/summary.md"
