#!/usr/bin/env bash
# Regenerates the numbers of docs/performance.md: prints the machine, then runs every benchmark
# of this package against a fresh tuned dev server, writing the raw output to $1 (default
# bench.out) as well as to stdout.
#
#	bench/run.sh [output-file]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench.out}"
{
	go version
	echo "nproc: $(nproc 2>/dev/null || echo unknown)"
	go test ./bench/ -run '^$' -bench . -benchtime 20x -count 3
} 2>&1 | tee "$out"
