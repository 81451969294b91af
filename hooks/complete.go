package hooks

import (
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"go.temporal.io/sdk/workflow"
)

// CompleteResponseOptions is what the response ends with.
type CompleteResponseOptions struct {
	// Message is published as a message chunk.
	Message string
	// Data is published as a generic structured-data final.
	Data map[string]any
}

// CompleteResponse ends the current chat response early (spec F6.8): it publishes the message
// and data, commits a session checkpoint of the state at this call (a checkpoint chunk), and
// ends the response with done — the HTTP route finalizes the turn and the session accepts the
// next one. The run goes on: later chunks are not part of that response, later work no longer
// advances the session head, and later questions are found through the waiting status
// (kortyx.ListWaiting). It returns the checkpoint id ("" outside a session); calling it again
// does nothing. A checkpoint over Temporal's payload limit fails with PAYLOAD_TOO_LARGE and
// ends nothing.
func CompleteResponse(ctx workflow.Context, opts CompleteResponseOptions) (string, error) {
	s, err := execution.From(ctx, "CompleteResponse")
	if err != nil {
		return "", err
	}
	run := s.Run()
	if run.Completed() {
		return "", nil
	}
	if strings.TrimSpace(opts.Message) != "" {
		run.Emit(contracts.Chunk{Type: contracts.ChunkMessage, Content: opts.Message, Node: s.Node()})
	}
	if opts.Data != nil {
		if _, err := StructuredData(ctx, StructuredDataOptions{Data: opts.Data}); err != nil {
			return "", err
		}
	}
	return run.CompleteResponse(ctx)
}
