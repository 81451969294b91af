package sessions

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
)

const turn = "turn-7"

func fzStructured(streamID string, kind contracts.StructuredKind, path, raw string) contracts.Chunk {
	c := contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: streamID, DataType: "plan", Kind: kind, Path: path}
	switch kind {
	case contracts.StructuredSet:
		c.Value = json.RawMessage(raw)
	case contracts.StructuredAppend:
		c.Items = json.RawMessage(raw)
	case contracts.StructuredTextDelta:
		c.Delta = raw
	case contracts.StructuredFinal:
		c.Data = json.RawMessage(raw)
	}
	return c
}

func fzInvalidated(streamID string) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkStructuredInvalidated, StreamID: streamID}
}

func fzCheckpoint(id string, turnIndex int) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkCheckpoint, ID: id, SessionID: "sess-1", TurnIndex: &turnIndex}
}

func fzError(message string, f *contracts.Failure) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkError, Message: message, Failure: f}
}

func fzInterrupt(t *testing.T, requestID, token string, in contracts.InterruptInput) contracts.Chunk {
	t.Helper()
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	return contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: requestID, ResumeToken: token, Workflow: "trip",
		Node: "confirm", ID: in.ID, SchemaID: in.SchemaID, SchemaVersion: in.SchemaVersion, Meta: in.Meta, Input: raw}
}

var (
	fzDone      = contracts.Chunk{Type: contracts.ChunkDone}
	fzSession   = contracts.Chunk{Type: contracts.ChunkSession, SessionID: "sess-1"}
	fzCancelled = contracts.Chunk{Type: contracts.ChunkCancelled, RunID: "run-1", Reason: "Execution cancelled."}
)

func textPiece(key, content string) ContentPiece {
	return ContentPiece{Type: pieceText, ID: turn + ":text:" + key, Content: content}
}

func messagePiece(i int, content string) ContentPiece {
	return ContentPiece{Type: pieceText, ID: fmt.Sprintf("%s:message:%d", turn, i), Content: content}
}

func structuredPiece(streamID, data, status string) ContentPiece {
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		panic(err)
	}
	return ContentPiece{Type: pieceStructured, ID: turn + ":structured:" + streamID,
		Data: &StructuredState{StreamID: streamID, DataType: "plan", Status: status, Data: m}}
}

func intPtr(n int) *int { return &n }

func TestFinalizeInterruptedTurn(t *testing.T) {
	in := contracts.InterruptInput{
		Kind: contracts.InterruptChoice, Question: "Book this trip?", ID: "confirm-trip",
		Options: []contracts.Option{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No", Description: "Start over"}},
		Meta:    json.RawMessage(`{"priority":"high"}`),
	}
	chunks := []contracts.Chunk{
		fzSession,
		{Type: contracts.ChunkTextStart, Node: "plan", OpID: "op1", SegmentID: "s1"},
		txt("op1", "s1", "Here is "),
		fzStructured("st1", contracts.StructuredSet, "title", `"Rome"`),
		txt("op1", "s1", "your plan."),
		{Type: contracts.ChunkTextEnd, Node: "plan", OpID: "op1", SegmentID: "s1"},
		fzStructured("st1", contracts.StructuredAppend, "days", `["Colosseum"]`),
		fzStructured("st1", contracts.StructuredAppend, "days", `["Vatican"]`),
		{Type: contracts.ChunkToolCallStart, Tool: "weather", ToolCallID: "tc1", Input: json.RawMessage(`{}`)},
		{Type: contracts.ChunkToolCallResult, Tool: "weather", ToolCallID: "tc1", Content: "sunny"},
		txt("op2", "s1", "Shall I book it?"),
		fzInterrupt(t, "req-1", "tok-secret", in),
		fzCheckpoint("cp-3", 2),
		fzDone,
	}
	msg, status := Finalize(turn, chunks)
	require.Equal(t, StatusInterrupted, status)
	require.Equal(t, FinalizedMessage{
		ID:      "turn-7:assistant",
		Role:    "assistant",
		Content: "Here is your plan. Shall I book it?",
		ContentPieces: []ContentPiece{
			textPiece("op1:s1", "Here is your plan."),
			structuredPiece("st1", `{"title":"Rome","days":["Colosseum","Vatican"]}`, structuredStreaming),
			textPiece("op2:s1", "Shall I book it?"),
			{
				Type: pieceInterrupt, ID: "turn-7:interrupt:req-1",
				ResumeToken: "tok-secret", RequestID: "req-1",
				Kind: contracts.InterruptChoice, Question: "Book this trip?",
				Options:     in.Options,
				InterruptID: "confirm-trip",
				Meta:        json.RawMessage(`{"priority":"high"}`),
			},
		},
		CheckpointID:        "cp-3",
		CheckpointTurnIndex: intPtr(2),
	}, msg)

	b, err := json.Marshal(msg)
	require.NoError(t, err)
	require.JSONEq(t, `{
		"id": "turn-7:assistant",
		"role": "assistant",
		"content": "Here is your plan. Shall I book it?",
		"contentPieces": [
			{"type": "text", "id": "turn-7:text:op1:s1", "content": "Here is your plan."},
			{"type": "structured", "id": "turn-7:structured:st1",
			 "data": {"streamId": "st1", "dataType": "plan", "status": "streaming", "data": {"title": "Rome", "days": ["Colosseum", "Vatican"]}}},
			{"type": "text", "id": "turn-7:text:op2:s1", "content": "Shall I book it?"},
			{"type": "interrupt", "id": "turn-7:interrupt:req-1", "resumeToken": "tok-secret", "requestId": "req-1",
			 "kind": "choice", "question": "Book this trip?", "multiple": false,
			 "options": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No", "description": "Start over"}],
			 "interruptId": "confirm-trip", "meta": {"priority": "high"}}
		],
		"checkpointId": "cp-3",
		"checkpointTurnIndex": 2
	}`, string(b))

	// A stored message decodes back to the same value.
	var back FinalizedMessage
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, msg, back)
}

func TestFinalizeCustomInterrupt(t *testing.T) {
	in := contracts.InterruptInput{Kind: contracts.InterruptCustom, Multiple: true, Question: "Fill the form",
		SchemaID: "form", SchemaVersion: "2", Contract: "trip-form", Request: json.RawMessage(`{"fields":["date"]}`)}
	c := fzInterrupt(t, "req-9", "tok-9", in)
	c.ID = "hook-from-chunk" // the input has no id: the chunk's hook id is used
	msg, status := Finalize(turn, []contracts.Chunk{c, fzDone})
	require.Equal(t, StatusInterrupted, status)
	require.Equal(t, []ContentPiece{{
		Type: pieceInterrupt, ID: "turn-7:interrupt:req-9", ResumeToken: "tok-9", RequestID: "req-9",
		Kind: contracts.InterruptCustom, Question: "Fill the form", Multiple: true,
		SchemaID: "form", SchemaVersion: "2", Contract: "trip-form", Request: json.RawMessage(`{"fields":["date"]}`),
		InterruptID: "hook-from-chunk",
	}}, msg.ContentPieces)

	b, err := json.Marshal(msg.ContentPieces[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"interrupt","id":"turn-7:interrupt:req-9","resumeToken":"tok-9","requestId":"req-9",
		"kind":"custom","question":"Fill the form","multiple":true,"options":[],"schemaId":"form","schemaVersion":"2",
		"contract":"trip-form","request":{"fields":["date"]},"interruptId":"hook-from-chunk"}`, string(b))
}

func TestFinalize(t *testing.T) {
	failure := &contracts.Failure{Version: 1, Code: contracts.CodeProviderHTTPError, Category: "provider",
		Message: "The model provider returned an error.", Retryable: true, Status: 502}
	badInput := contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: "req-2", ResumeToken: "tok-2", ID: "h2",
		SchemaID: "s", Input: json.RawMessage(`{"kind":`)}

	tests := []struct {
		name    string
		chunks  []contracts.Chunk
		status  Status
		content string
		pieces  []ContentPiece
		cpID    string
		cpTurn  *int
	}{
		{
			name:   "empty response",
			chunks: []contracts.Chunk{fzSession, fzDone},
			status: StatusCompleted,
			pieces: []ContentPiece{},
		},
		{
			name:    "message-only response",
			chunks:  []contracts.Chunk{fzSession, msgChunk("Done."), msgChunk(""), msgChunk("See you."), fzCheckpoint("cp-1", 0), fzDone},
			status:  StatusCompleted,
			content: "Done.\nSee you.",
			pieces:  []ContentPiece{messagePiece(0, "Done."), messagePiece(2, "See you.")},
			cpID:    "cp-1", cpTurn: intPtr(0),
		},
		{
			name:    "messages are dropped when text was streamed",
			chunks:  []contracts.Chunk{msgChunk("Summary."), txt("op1", "s1", "Streamed"), fzDone},
			status:  StatusCompleted,
			content: "Streamed",
			pieces:  []ContentPiece{textPiece("op1:s1", "Streamed")},
		},
		{
			name: "interleaved text streams accumulate per key",
			chunks: []contracts.Chunk{
				txt("op1", "s1", "Hel"), txt("op2", "s1", "Wor"), txt("op1", "s1", "lo"), txt("op2", "s1", "ld"),
				txt("op3", "s1", ""), fzDone,
			},
			status:  StatusCompleted,
			content: "Hello World",
			pieces:  []ContentPiece{textPiece("op1:s1", "Hello"), textPiece("op2:s1", "World")},
		},
		{
			name: "text-invalidated segment removed",
			chunks: []contracts.Chunk{
				txt("op1", "s1", "Hel"), txtInvalidated("op1", "s1"), txt("op1", "s1~2", "Hello "), txt("op2", "s1", "world"), fzDone,
			},
			status:  StatusCompleted,
			content: "Hello world",
			pieces:  []ContentPiece{textPiece("op1:s1~2", "Hello "), textPiece("op2:s1", "world")},
		},
		{
			name: "invalidated structured stream removed",
			chunks: []contracts.Chunk{
				fzStructured("a", contracts.StructuredSet, "x", `1`),
				fzStructured("b", contracts.StructuredSet, "y", `2`),
				fzStructured("a", contracts.StructuredSet, "z", `3`),
				fzInvalidated("a"),
				fzInvalidated("unknown"),
				fzDone,
			},
			status: StatusCompleted,
			pieces: []ContentPiece{structuredPiece("b", `{"y":2}`, structuredStreaming)},
		},
		{
			name: "an invalidated stream starts again at its later position",
			chunks: []contracts.Chunk{
				fzStructured("a", contracts.StructuredSet, "x", `1`),
				fzStructured("b", contracts.StructuredSet, "y", `2`),
				fzInvalidated("a"),
				txt("op1", "s1", "Retrying."),
				fzStructured("a", contracts.StructuredSet, "w", `4`),
				fzStructured("a", contracts.StructuredFinal, "", `{"w":5}`),
				fzDone,
			},
			status:  StatusCompleted,
			content: "Retrying.",
			pieces: []ContentPiece{
				structuredPiece("b", `{"y":2}`, structuredStreaming),
				textPiece("op1:s1", "Retrying."),
				structuredPiece("a", `{"w":5}`, structuredDone),
			},
		},
		{
			name: "a malformed structured chunk is skipped",
			chunks: []contracts.Chunk{
				fzStructured("a", contracts.StructuredSet, "x", `"text"`),
				fzStructured("a", contracts.StructuredAppend, "x", `[1]`), // append to a string
				fzStructured("a", contracts.StructuredSet, "", `1`),       // empty path
				fzStructured("b", contracts.StructuredSet, "0", `1`),      // index into the root: no piece
				fzStructured("a", contracts.StructuredTextDelta, "x", "!"),
				fzDone,
			},
			status: StatusCompleted,
			pieces: []ContentPiece{structuredPiece("a", `{"x":"text!"}`, structuredStreaming)},
		},
		{
			name: "chunks after final are skipped",
			chunks: []contracts.Chunk{
				fzStructured("a", contracts.StructuredFinal, "", `{"v":1}`),
				fzStructured("a", contracts.StructuredSet, "v", `2`),
				fzDone,
			},
			status: StatusCompleted,
			pieces: []ContentPiece{structuredPiece("a", `{"v":1}`, structuredDone)},
		},
		{
			name: "error piece and status failed",
			chunks: []contracts.Chunk{
				fzSession, txt("op1", "s1", "Partial"), fzError(failure.Message, failure), fzDone,
			},
			status:  StatusFailed,
			content: "Partial",
			pieces: []ContentPiece{
				textPiece("op1:s1", "Partial"),
				{Type: pieceError, ID: "turn-7:error:0", Content: failure.Message, Failure: failure},
			},
		},
		{
			name:   "error pieces are numbered; content falls back to the failure's message",
			chunks: []contracts.Chunk{fzError("first", nil), fzError("", failure), fzDone},
			status: StatusFailed,
			pieces: []ContentPiece{
				{Type: pieceError, ID: "turn-7:error:0", Content: "first"},
				{Type: pieceError, ID: "turn-7:error:1", Content: failure.Message, Failure: failure},
			},
		},
		{
			name:    "cancelled",
			chunks:  []contracts.Chunk{fzSession, txt("op1", "s1", "Half"), fzCancelled, fzDone},
			status:  StatusCancelled,
			content: "Half",
			pieces:  []ContentPiece{textPiece("op1:s1", "Half")},
		},
		{
			name:   "cancelled wins over failed and interrupted",
			chunks: []contracts.Chunk{badInput, fzError("boom", nil), fzCancelled, fzDone},
			status: StatusCancelled,
			pieces: []ContentPiece{
				{Type: pieceInterrupt, ID: "turn-7:interrupt:req-2", ResumeToken: "tok-2", RequestID: "req-2", SchemaID: "s", InterruptID: "h2"},
				{Type: pieceError, ID: "turn-7:error:0", Content: "boom"},
			},
		},
		{
			name:   "failed wins over interrupted",
			chunks: []contracts.Chunk{badInput, fzError("boom", nil), fzDone},
			status: StatusFailed,
			pieces: []ContentPiece{
				{Type: pieceInterrupt, ID: "turn-7:interrupt:req-2", ResumeToken: "tok-2", RequestID: "req-2", SchemaID: "s", InterruptID: "h2"},
				{Type: pieceError, ID: "turn-7:error:0", Content: "boom"},
			},
		},
		{
			name: "a repeated interrupt replaces its piece in place",
			chunks: []contracts.Chunk{
				{Type: contracts.ChunkInterrupt, RequestID: "req-1", ResumeToken: "old"},
				txt("op1", "s1", "x"),
				{Type: contracts.ChunkInterrupt, RequestID: "req-1", ResumeToken: "new"},
				fzDone,
			},
			status:  StatusInterrupted,
			content: "x",
			pieces: []ContentPiece{
				{Type: pieceInterrupt, ID: "turn-7:interrupt:req-1", ResumeToken: "new", RequestID: "req-1"},
				textPiece("op1:s1", "x"),
			},
		},
		{
			name: "chunks that make no piece",
			chunks: []contracts.Chunk{
				fzSession,
				{Type: contracts.ChunkType("trace"), TraceID: "t"},
				{Type: contracts.ChunkStatus, Message: "thinking"},
				{Type: contracts.ChunkToolCallStart, Tool: "t", ToolCallID: "1"},
				{Type: contracts.ChunkToolCallResult, Tool: "t", ToolCallID: "1", Content: "r"},
				{Type: contracts.ChunkToolCallError, Tool: "t", ToolCallID: "2", Message: "bad"},
				{Type: contracts.ChunkType("tool-result"), Content: "legacy"},
				{Type: contracts.ChunkTransition, TransitionTo: "next"},
				{Type: contracts.ChunkLimitReached, Limit: "steps"},
				{Type: contracts.ChunkResumeRejected, RequestID: "req-1", Failure: failure},
				fzDone,
			},
			status: StatusCompleted,
			pieces: []ContentPiece{},
		},
		{
			name: "chunks after done are ignored",
			chunks: []contracts.Chunk{
				msgChunk("Answer."), fzCheckpoint("cp-1", 1), fzDone,
				msgChunk("Later."), fzError("later failure", nil), fzCheckpoint("cp-2", 2), fzDone,
			},
			status:  StatusCompleted,
			content: "Answer.",
			pieces:  []ContentPiece{messagePiece(0, "Answer.")},
			cpID:    "cp-1", cpTurn: intPtr(1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, status := Finalize(turn, tt.chunks)
			require.Equal(t, tt.status, status)
			require.Equal(t, FinalizedMessage{ID: "turn-7:assistant", Role: "assistant", Content: tt.content,
				ContentPieces: tt.pieces, CheckpointID: tt.cpID, CheckpointTurnIndex: tt.cpTurn}, msg)
		})
	}
}

func TestFinalizeContentMatchesBuffer(t *testing.T) {
	for _, chunks := range [][]contracts.Chunk{
		{txt("op1", "s1", "Hello"), txt("op1", "s2", "world"), fzDone},
		{txt("op1", "s1", "Hello "), txt("op1", "s2", "world"), fzDone},
		{txt("op1", "s1", "Hel"), txtInvalidated("op1", "s1"), txt("op1", "s1~2", "Hello"), txt("op2", "s1", "\nworld"), fzDone},
		{msgChunk("One."), msgChunk("Two."), fzDone},
	} {
		msg, _ := Finalize(turn, chunks)
		require.Equal(t, Buffer(chunks).Text, msg.Content)
	}
}

func TestFinalizeDoesNotAliasInput(t *testing.T) {
	f := &contracts.Failure{Code: contracts.CodeExecutionFailed, Message: "x"}
	turnIndex := 4
	chunks := []contracts.Chunk{fzError("x", f), {Type: contracts.ChunkCheckpoint, ID: "cp", TurnIndex: &turnIndex}, fzDone}
	msg, _ := Finalize(turn, chunks)
	f.Message = "changed"
	turnIndex = 5
	require.Equal(t, "x", msg.ContentPieces[0].Failure.Message)
	require.Equal(t, 4, *msg.CheckpointTurnIndex)
}

func TestContentPieceJSON(t *testing.T) {
	tests := []struct {
		name  string
		piece ContentPiece
		want  string
	}{
		{"text", ContentPiece{Type: pieceText, ID: "t:text:k", Content: "hi", RequestID: "ignored"},
			`{"type":"text","id":"t:text:k","content":"hi"}`},
		{"structured", ContentPiece{Type: pieceStructured, ID: "t:structured:s",
			Data: &StructuredState{StreamID: "s", DataType: "d", Status: "done", Data: map[string]any{}}},
			`{"type":"structured","id":"t:structured:s","data":{"streamId":"s","dataType":"d","status":"done","data":{}}}`},
		{"interrupt minimal", ContentPiece{Type: pieceInterrupt, ID: "t:interrupt:r", RequestID: "r", ResumeToken: "k", Kind: contracts.InterruptText},
			`{"type":"interrupt","id":"t:interrupt:r","resumeToken":"k","requestId":"r","kind":"text","multiple":false,"options":[]}`},
		{"error without failure", ContentPiece{Type: pieceError, ID: "t:error:0"},
			`{"type":"error","id":"t:error:0","content":""}`},
		{"error", ContentPiece{Type: pieceError, ID: "t:error:0", Content: "boom",
			Failure: &contracts.Failure{Version: 1, Code: contracts.CodeExecutionFailed, Category: "internal", Message: "boom"}},
			`{"type":"error","id":"t:error:0","content":"boom","failure":{"version":1,"code":"EXECUTION_FAILED","category":"internal","message":"boom","retryable":false}}`},
		{"other type", ContentPiece{Type: "tool", ID: "t:tool:1", Content: "c"},
			`{"type":"tool","id":"t:tool:1","content":"c"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.piece)
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(b))
		})
	}
}

func ExampleFinalize() {
	input, _ := json.Marshal(contracts.InterruptInput{Kind: contracts.InterruptText, Question: "Which city?"})
	turnIndex := 3
	msg, status := Finalize("turn-1", []contracts.Chunk{
		{Type: contracts.ChunkSession, SessionID: "sess-1"},
		{Type: contracts.ChunkTextDelta, OpID: "op1", SegmentID: "s1", Delta: "I can plan that."},
		{Type: contracts.ChunkStructuredData, StreamID: "plan", DataType: "plan", Kind: contracts.StructuredSet,
			Path: "days", Value: json.RawMessage(`2`)},
		{Type: contracts.ChunkInterrupt, RequestID: "req-1", ResumeToken: "tok-1", Input: input},
		{Type: contracts.ChunkCheckpoint, ID: "cp-9", SessionID: "sess-1", TurnIndex: &turnIndex},
		{Type: contracts.ChunkDone},
	})
	fmt.Println(status, msg.CheckpointID)
	b, _ := json.MarshalIndent(msg.ContentPieces, "", "  ")
	fmt.Println(string(b))
	// Output:
	// interrupted cp-9
	// [
	//   {
	//     "type": "text",
	//     "id": "turn-1:text:op1:s1",
	//     "content": "I can plan that."
	//   },
	//   {
	//     "type": "structured",
	//     "id": "turn-1:structured:plan",
	//     "data": {
	//       "streamId": "plan",
	//       "dataType": "plan",
	//       "status": "streaming",
	//       "data": {
	//         "days": 2
	//       }
	//     }
	//   },
	//   {
	//     "type": "interrupt",
	//     "id": "turn-1:interrupt:req-1",
	//     "resumeToken": "tok-1",
	//     "requestId": "req-1",
	//     "kind": "text",
	//     "question": "Which city?",
	//     "multiple": false,
	//     "options": []
	//   }
	// ]
}
