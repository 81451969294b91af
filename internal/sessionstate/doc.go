// Package sessionstate is the session's state machine: the state a session workflow keeps
// ([protocol.SessionState]) and its transitions — start a prompt turn, claim an answer turn,
// abort it, apply a run's report, stop, roll back, fork, prune, and what continue-as-new
// carries — as plain methods without Temporal calls.
//
// Ids, time and the version gate are inputs; what a transition needs done (runs to cancel, the
// input of a run to start, the memo to write) is returned, and the session workflow
// (workflows.Runner.Session) executes it in the order the methods are called. That order is
// part of the workflow's history: the shell asks the machine in small steps (plan, execute,
// commit) so that every command is issued where it always was.
//
// [RunSide] is the other half of the protocol, in the run: the binding a run of a session
// starts with, what its response ran and streamed, and the checkpoints and reports it sends
// (the ones [Machine.Apply] applies). The run state (execution.Run) holds it behind a small
// interface and makes the Temporal calls around it (the checkpoint id, the report signal).
//
// The machine is workflow-side code (it runs inside the session workflow) and must stay
// deterministic: maps are walked with workflow.DeterministicKeys.
package sessionstate
