package aisdk_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/aisdk"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/stretchr/testify/require"
)

func body(t *testing.T, known map[string]bool, chunks ...contracts.Chunk) string {
	t.Helper()
	b, err := aisdk.Body(known, chunks...)
	require.NoError(t, err)
	return b
}

func text(typ contracts.ChunkType, delta string) contracts.Chunk {
	return contracts.Chunk{Type: typ, Node: "agent", OpID: "op1", SegmentID: "s1", Delta: delta}
}

func approvalChunk() contracts.Chunk {
	meta := mustJSON(map[string]any{"tool": "refund", "toolCallId": "call_2", "input": json.RawMessage(`{"orderId":"A-1001"}`)})
	in := contracts.InterruptInput{Kind: contracts.InterruptChoice, Question: "Approve refund?", ID: "tool:call_2", Meta: meta,
		Options: []contracts.Option{{ID: "approve", Label: "Approve"}, {ID: "deny", Label: "Deny"}}}
	return contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: "human-1", ResumeToken: "tok_A", Node: "agent", ID: in.ID, Input: mustJSON(in)}
}

// TestMappingReadByTheAISDK feeds response bodies to the AI SDK's own parser and message
// reader (test/npmclients/aisdk-parts.mjs) and checks the assistant message they build.
func TestMappingReadByTheAISDK(t *testing.T) {
	lookup := []contracts.Chunk{
		{Type: contracts.ChunkToolCallStart, Tool: "lookup_order", ToolCallID: "call_1", Input: json.RawMessage(`{"orderId":"A-1001"}`)},
		{Type: contracts.ChunkToolCallResult, Tool: "lookup_order", ToolCallID: "call_1", Content: `{"status":"delivered"}`},
	}
	answer := []contracts.Chunk{text(contracts.ChunkTextStart, ""), text(contracts.ChunkTextDelta, "Done."), text(contracts.ChunkTextEnd, "")}
	sd := contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: "st1", DataType: "ticket", Kind: contracts.StructuredSet, Path: "title", Value: json.RawMessage(`"T"`)}
	sd2 := sd
	sd2.Kind, sd2.Path, sd2.Value, sd2.Delta = contracts.StructuredTextDelta, "summary", nil, "hi"
	ask := contracts.InterruptInput{Kind: contracts.InterruptText, Question: "Name?", Options: []contracts.Option{}}
	askChunk := contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: "human-1", ResumeToken: "tok", Node: "n", Input: mustJSON(ask)}
	done := contracts.Chunk{Type: contracts.ChunkDone}
	cancel := []contracts.Chunk{{Type: contracts.ChunkCancelled, RunID: "run-1", Reason: "Execution cancelled."}, done}
	// The question's message as the chat holds it after addToolOutput({state: "output-error"}).
	cancelledAsk := `[{"type":"step-start"},{"type":"tool-kortyx_ask","toolCallId":"human-1.tok","state":"output-error","input":{"question":"Name?"},"errorText":"not telling"}]`
	cancelBody, err := aisdk.CancelBody("human-1.tok", "not telling", cancel...)
	require.NoError(t, err)
	cases := []struct {
		name      string
		message   string // the parts of the assistant message the response continues, if any
		sse       string
		parts     string
		error     string
		sendAgain bool
	}{
		{name: "text after a tool", sse: body(t, nil, append(append(lookup, answer...), done)...),
			parts: `[{"type":"step-start"},{"type":"tool-lookup_order","toolCallId":"call_1","state":"output-available","input":{"orderId":"A-1001"},"output":{"status":"delivered"}},{"type":"step-start"},{"type":"text","text":"Done.","state":"done"}]`},
		{name: "approval", sse: body(t, nil, append(lookup, approvalChunk(), done)...),
			parts: `[{"type":"step-start"},{"type":"tool-lookup_order","toolCallId":"call_1","state":"output-available","input":{"orderId":"A-1001"},"output":{"status":"delivered"}},{"type":"step-start"},{"type":"tool-refund","toolCallId":"call_2","state":"approval-requested","input":{"orderId":"A-1001"},"approval":{"id":"human-1.tok_A"}}]`},
		{name: "ends with a tool output", sse: body(t, nil, append(lookup, done)...), sendAgain: true, // see docs/aisdk.md
			parts: `[{"type":"step-start"},{"type":"tool-lookup_order","toolCallId":"call_1","state":"output-available","input":{"orderId":"A-1001"},"output":{"status":"delivered"}}]`},
		{name: "structured data", sse: body(t, nil, sd, sd2, done),
			parts: `[{"type":"step-start"},{"type":"data-ticket","id":"st1","data":{"summary":"hi","title":"T"}}]`},
		{name: "question", sse: body(t, nil, askChunk, done),
			parts: `[{"type":"step-start"},{"type":"tool-kortyx_ask","toolCallId":"human-1.tok","state":"input-available","input":{"question":"Name?","kind":"text","schema":{"minLength":1,"type":"string"},"node":"n"}}]`},
		{name: "error", sse: body(t, nil, answer[0], answer[1], contracts.Chunk{Type: contracts.ChunkError, Failure: &contracts.Failure{Code: contracts.CodeProviderHTTPError, Message: "Provider request failed (HTTP 400)."}}, done),
			parts: `[{"type":"step-start"},{"type":"text","text":"Done.","state":"streaming"}]`, error: "PROVIDER_HTTP_ERROR: Provider request failed (HTTP 400)."},
		// A cancel's response ends the question with a step after it: the chat does not send the
		// cancel again. Without the step (the response of another cancelled run), the message
		// stays as the client left it, and sendAutomaticallyWhen would send it again.
		{name: "question cancelled", message: cancelledAsk, sse: cancelBody,
			parts: `[{"type":"step-start"},{"type":"tool-kortyx_ask","toolCallId":"human-1.tok","state":"output-error","input":{"question":"Name?"},"errorText":"not telling"},{"type":"step-start"}]`},
		{name: "cancelled, no question cancelled", message: cancelledAsk, sse: body(t, nil, cancel...), parts: cancelledAsk, sendAgain: true},
	}
	p := nodeclient.Start(t, "aisdk-parts.mjs", nil)
	for _, tc := range cases {
		cmd := map[string]any{"name": tc.name, "sse": tc.sse}
		if tc.message != "" {
			cmd["message"] = map[string]any{"id": "a1", "role": "assistant", "parts": json.RawMessage(tc.message)}
		}
		p.Send(cmd)
		var got struct {
			Name    string
			Message *struct {
				Role  string
				Parts json.RawMessage
			}
			Error     *string
			SendAgain bool
		}
		p.Expect("message", time.Minute).Decode(t, &got)
		require.Equal(t, tc.name, got.Name)
		require.NotNil(t, got.Message, "%s: %v", tc.name, got.Error)
		require.Equal(t, "assistant", got.Message.Role)
		require.JSONEq(t, tc.parts, string(got.Message.Parts), tc.name)
		if tc.error == "" {
			require.Nil(t, got.Error, tc.name)
		} else {
			require.NotNil(t, got.Error, tc.name)
			require.Equal(t, tc.error, *got.Error, tc.name)
		}
		require.Equal(t, tc.sendAgain, got.SendAgain, tc.name)
	}
	p.Wait(time.Minute)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
