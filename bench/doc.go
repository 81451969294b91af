// Package bench measures what Kortyx adds on top of plain Temporal: each workload runs once as a
// Kortyx run (a graph of nodes executed by the run workflow) and once as a hand-written Temporal
// workflow doing the same work, on the same worker, task queue and dev server.
//
// The package holds only tests and benchmarks. The benchmarks start one tuned, in-memory
// Temporal dev server (the CLI from $TEMPORAL_CLI_PATH, <module root>/.tools/bin or $PATH; they
// fail, not skip, when it is missing) and one worker; a few workloads start workers of their
// own (other converters, another process). Run them all, with the LangGraph JS peer
// (bench/peers/langgraph) and the summary table of bench/cmd/report, with:
//
//	make bench        # = bench/run.sh [results-dir]; results in bench/results
//
// Without -bench, "go test ./bench/" only runs the agreement tests (TestBaselinesAgree,
// TestReasonBaselinesAgree, TestLocalToolBaselinesAgree, TestHistoryAgree, TestThroughputAgree,
// TestToolLoopNAgree, TestWorkerRSSAgree), which execute every workload briefly in each
// variant and check that the variants do the same work (same steps, same chunks); none of them
// asserts a timing.
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
//   - BenchmarkToolLoop50: hooks.Reason with 50 tool calls of 16-byte results, against the plain
//     loop; the loop the LangGraph peer runs.
//   - BenchmarkHistoryGrowth (-benchtime 1x): history events and bytes of a tool loop of 10, 50
//     and 200 steps with 1 KB and 100 KB tool results, per configuration (historyConfigs:
//     inline, claim check, claim check with messages by reference), printed as "History {json}"
//     lines; KORTYX_BENCH_HISTORY_MAX_STEPS leaves out the longer loops (make bench: 50).
//   - BenchmarkThroughput (-benchtime 1x): runs completed per second with 1, 10 and 100 runs of
//     a 3-step agent in flight, Kortyx and plain.
//   - BenchmarkWorkerRSS (-benchtime 1x): VmRSS of a worker process (bench/cmd/waitworker) per
//     waiting run, with the default sticky cache and with a cache of 10; "RSS {json}" lines.
//   - BenchmarkWaitingRunMemory (-benchtime 1x): heap and goroutines per waiting run in process.
//   - BenchmarkActionsPerTurn (-benchtime 1x): billable Temporal actions (Temporal Cloud's
//     rules) of each example agent's turn through the chat route, counted from the histories
//     and, for heartbeats and queries, from a counting proxy in front of the dev server
//     (bench/internal/rpccount); beside the hand-written equivalent or its floor by rule;
//     "Actions {json}" lines.
//   - BenchmarkFinishedSessions (-benchtime 1x, run alone): heap and VmRSS of a dev-mode stack
//     after N finished hello sessions through the chat route, with the memory bounds (sticky
//     cache, stream retention) and without; "Sessions {json}" lines.
//
// bench/cmd/load (not a test: a program make bench runs) is the load test over Redis with real
// processes (bench/cmd/loadworker).
//
// Metrics: ms/node (or ms/roundtrip) of wall time, events/run and wft/run (workflow tasks) from
// the history of one run, outside the timed region. See docs/performance.md for results.
package bench
