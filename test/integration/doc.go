// Package integration holds the tests that run against a real Temporal dev server: answers by
// signal and update, a worker killed with SIGKILL while a run waits, the dev server restarted
// on the same database, cancellation, the command-line programs, and the replay of recorded
// histories. TestMain starts one tuned in-memory dev server for the package; it fails (never
// skips) when the Temporal CLI is missing — `make tools` installs it.
package integration
