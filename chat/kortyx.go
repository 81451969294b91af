package chat

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
)

// codeCancelled is the failure code of the error chunk that tells a Kortyx-framed client the run
// was cancelled (Kortyx has no cancelled chunk; see [kortyxChunks]). It is not
// EXECUTION_CANCELLED: Kortyx's newer stream reader (the one with typed MALFORMED_STREAM
// failures) treats a failure with that code as a control-flow signal and fails the stream as
// malformed; v0.14's reader hands such a chunk on.
const codeCancelled contracts.Code = "CANCELLED"

// codeLimitReached replaces EXECUTION_LIMIT_REACHED in the error chunks of Kortyx framing, for
// the same reason as [codeCancelled].
const codeLimitReached contracts.Code = "LIMIT_REACHED"

// resumable reports whether r gets resumable framing. The chat route writes one of two framings:
//
//   - Kortyx framing (the default): each chunk as one event "data: <json>" and a blank line
//     (LF endings), keep-alive comments, "data: [DONE]" at the end, no "id:" lines; chunk shapes
//     Kortyx's client rejects are translated (see [kortyxChunks]). This is what Kortyx's own
//     stream reader accepts.
//   - Resumable framing, for a request with "X-Kortyx-Resumable: 1" or with a Last-Event-ID
//     header: each event's data line is preceded by "id: <offset>" (the offset to send back as
//     Last-Event-ID on reconnect), and chunks are written as the run published them.
//
// r gets it when it carries "X-Kortyx-Resumable: 1" ([httpwire.ResumableHeader]) or a Last-Event-ID
// header.
func resumable(r *http.Request) bool {
	return strings.TrimSpace(r.Header.Get(httpwire.ResumableHeader)) == "1" || r.Header.Get("Last-Event-ID") != ""
}

// kortyxChunks returns the events Kortyx framing writes for chunk c of run runID, as JSON
// values:
//
//   - cancelled becomes an error chunk {type: "error", message, failure} whose failure has code
//     [codeCancelled], category "workflow", retryable false and details {runId, reason};
//   - an error chunk whose failure code is EXECUTION_CANCELLED or EXECUTION_LIMIT_REACHED gets
//     [codeCancelled] or [codeLimitReached] instead;
//   - structured-data-invalidated without a checkpointId (this port voids a stream's provisional
//     fields when a model pass is retried, not only on rollback) gets the run id as checkpointId;
//   - an interrupt whose input kind is "custom" is sent with kind "text" (Kortyx knows only text,
//     choice and multi-choice), keeping its contract, request and schema fields; the answer is
//     the JSON object sent as the text (see [Resume.Response]); a text question's empty options
//     are left out;
//   - every other chunk is written as published.
func kortyxChunks(runID string, c contracts.Chunk) []any {
	switch c.Type {
	case contracts.ChunkCancelled:
		msg := "The run was cancelled."
		details := map[string]any{"runId": c.RunID}
		if c.Reason != "" {
			msg = "The run was cancelled: " + c.Reason
			details["reason"] = c.Reason
		}
		if c.RunID == "" {
			details["runId"] = runID
		}
		f := contracts.Failure{Version: 1, Code: codeCancelled, Category: "workflow", Message: msg, Details: details}
		return []any{contracts.Chunk{Type: contracts.ChunkError, Message: msg, Failure: &f, Node: c.Node}}
	case contracts.ChunkError:
		if c.Failure != nil {
			switch c.Failure.Code {
			case contracts.CodeExecutionCancelled:
				f := *c.Failure
				f.Code = codeCancelled
				c.Failure = &f
			case contracts.CodeExecutionLimitReached:
				f := *c.Failure
				f.Code = codeLimitReached
				c.Failure = &f
			}
		}
	case contracts.ChunkStructuredInvalidated:
		if c.CheckpointID == "" {
			c.CheckpointID = runID
		}
	case contracts.ChunkInterrupt:
		if in, ok := kortyxInput(c.Input); ok {
			c.Input = in
		}
	}
	return []any{c}
}

// kortyxInput rewrites an interrupt's input for Kortyx (custom as text, no empty options on a
// text question); ok is false when nothing changes.
func kortyxInput(raw json.RawMessage) (json.RawMessage, bool) {
	var in map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &in) != nil {
		return nil, false
	}
	var kind string
	_ = json.Unmarshal(in["kind"], &kind)
	switch kind {
	case string(contracts.InterruptCustom):
		in["kind"] = json.RawMessage(`"text"`)
		delete(in, "options")
	case string(contracts.InterruptText):
		var opts []json.RawMessage
		if o, ok := in["options"]; !ok || (json.Unmarshal(o, &opts) == nil && len(opts) > 0) {
			return nil, false
		}
		delete(in, "options")
	default:
		return nil, false
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, false
	}
	return b, true
}
