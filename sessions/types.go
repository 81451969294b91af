package sessions

import "github.com/kortyx-go/kortyx/internal/sessionapi"

// The types of the service's calls and of the routes' answers. They are defined in an internal
// package that the session workflow shares; their JSON is what the chat and checkpoint routes
// send.
type (
	// TurnRequest starts a prompt turn ([Service.Start]).
	TurnRequest = sessionapi.TurnRequest
	// TurnStarted says which run answers a turn and where its response begins.
	TurnStarted = sessionapi.TurnStarted
	// ActiveTurn is the turn a session runs now.
	ActiveTurn = sessionapi.ActiveTurn
	// SessionView is a session's checkpoints, head, active turn and open questions ([Service.View]).
	SessionView = sessionapi.SessionView
	// Checkpoint is a session checkpoint (spec F5.3) without its run state.
	Checkpoint = sessionapi.Checkpoint
	// CheckpointSummary is a checkpoint without its run id, effects and pending requests.
	CheckpointSummary = sessionapi.CheckpointSummary
	// CheckpointEffects are what a turn published that a rollback invalidates.
	CheckpointEffects = sessionapi.CheckpointEffects
	// RollbackResult is the answer of [Service.Rollback].
	RollbackResult = sessionapi.RollbackResult
	// ForkRequest and ForkResult are the request and answer of [Service.Fork].
	ForkRequest = sessionapi.ForkRequest
	ForkResult  = sessionapi.ForkResult
	// ReissuedRequest is an open question a fork asks again under a new token and request id.
	ReissuedRequest = sessionapi.ReissuedRequest
)
