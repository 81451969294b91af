// Package protocol holds the payloads that Kortyx's workflows send each other and keep in
// their durable state, and that no user sets or reads: a run's start beyond what a client
// gives ([RunStart]), its snapshot and hook state, the session binding and checkpoint reports
// between a run and its session, the session's state and what continue-as-new carries
// ([SessionStart]), and the child-call protocol (bindings, questions, outcomes, budget
// reservations and grants).
//
// These types are part of recorded histories: their JSON is exactly what it was when they were
// public in package contracts (field names, order and omitempty), so histories recorded then
// replay against this code, and a payload a user's plain Temporal client sends
// ([contracts.RunInput], [protocol.SessionInput]) decodes into the embedding type. Like
// contracts, it has no effects and is safe in workflow code.
package protocol
