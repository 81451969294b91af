// Package bench measures what Kortyx adds on top of plain Temporal: each workload runs once as a
// Kortyx run (a graph of nodes executed by the run workflow) and once as a hand-written Temporal
// workflow doing the same work, on the same worker, task queue and dev server.
//
// The package holds only tests and benchmarks. The benchmarks start one tuned, in-memory
// Temporal dev server (the CLI from $TEMPORAL_CLI_PATH, <module root>/.tools/bin or $PATH; they
// fail, not skip, when it is missing) and one worker. Run them with:
//
//	go test ./bench/ -run '^$' -bench . -benchtime 20x -count 3 | tee bench.out
//
// or bench/run.sh, which also records the Go version and CPU count. Without -bench,
// "go test ./bench/" only runs TestBaselinesAgree, which executes every workload once in both
// variants and checks that they do the same work (same steps, same chunks).
//
// Workloads, with N = 20 nodes (steps) per run:
//
//   - BenchmarkActivityStep: each node runs one no-op activity.
//   - BenchmarkPublishStep: each node publishes one structured-data chunk (the run's publish
//     local activity; a local activity calling the same broker in the plain workflow).
//   - BenchmarkPureNode: each node only returns data (plain: map updates in a loop).
//   - BenchmarkInterruptRoundTrip: a question answered by signal or by update; measured from
//     sending the answer until the next chunk is in the broker.
//   - BenchmarkToolLoopStep, BenchmarkToolLoopStepEmit: hooks.Reason with one tool called ten
//     times (11 model passes) against a plain workflow calling the same kortyx.Model and
//     kortyx.Tool activities; silent, and with text and tool chunks published.
//   - BenchmarkLocalToolStep: the silent tool loop with a local tool (tools.Local) and with a
//     regular one, in Kortyx and in plain Temporal (one model activity and one local or regular
//     kortyx.Tool activity per step), and the model passes alone; every iteration runs each
//     variant once (rotated order), reporting ms/step-<variant> and paired ratios x-<a>/<b>.
//   - BenchmarkTimeToFirstToken: the provider's first delta → a stream subscriber has it, against
//     a plain activity (with and without heartbeat) and an in-process path without Temporal.
//
// Metrics: ms/node (or ms/roundtrip) of wall time, events/run and wft/run (workflow tasks) from
// the history of one run, outside the timed region. See docs/performance.md for results.
package bench
