package sessions

import "github.com/kortyx-go/kortyx/contracts"

// ApplyStructured applies one structured-data chunk to the reduced value of its stream (nil for
// the stream's first chunk) and returns the new value, as [Finalize] reduces them: a wire that
// shows a stream's value as a whole after each chunk (the AI SDK's data parts) reduces it with
// the same rules. The input is never modified; errors are MALFORMED_STREAM.
func ApplyStructured(s *StructuredState, c contracts.Chunk) (*StructuredState, error) {
	return applyStructured(s, c)
}
