package aisdk

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/stretchr/testify/require"
)

// lines maps chunks with one mapper and returns each UI chunk as its JSON.
func lines(t *testing.T, known map[string]bool, chunks ...contracts.Chunk) []string {
	t.Helper()
	return mapped(t, newMapper(known), chunks...)
}

// mapped maps chunks with m and returns each UI chunk as its JSON.
func mapped(t *testing.T, m *mapper, chunks ...contracts.Chunk) []string {
	t.Helper()
	var out []string
	for _, c := range append([]contracts.Chunk{{Type: contracts.ChunkSession, SessionID: "s"}}, chunks...) {
		for _, v := range m.chunk(c) {
			b, err := json.Marshal(v)
			require.NoError(t, err)
			out = append(out, string(b))
		}
	}
	return out
}

func text(typ contracts.ChunkType, delta string) contracts.Chunk {
	return contracts.Chunk{Type: typ, Node: "agent", OpID: "op1", SegmentID: "s1", Delta: delta}
}

func approvalChunk(t *testing.T) contracts.Chunk {
	meta, _ := json.Marshal(map[string]any{"tool": "refund", "toolCallId": "call_2", "input": json.RawMessage(`{"orderId":"A-1001"}`)})
	in := contracts.InterruptInput{Kind: contracts.InterruptChoice, Question: "Approve refund?", ID: "tool:call_2", Meta: meta,
		Options: []contracts.Option{{ID: "approve", Label: "Approve"}, {ID: "deny", Label: "Deny"}}}
	return protocol.InterruptChunk(contracts.PendingRequest{RequestID: "human-1", Token: "tok_A", Node: "agent", HookID: "tool:call_2", Input: in})
}

func TestMapText(t *testing.T) {
	got := lines(t, nil,
		text(contracts.ChunkTextStart, ""), text(contracts.ChunkTextDelta, "Hel"), text(contracts.ChunkTextDelta, "lo"), text(contracts.ChunkTextEnd, ""),
		contracts.Chunk{Type: contracts.ChunkCheckpoint, ID: "cp-1"},
		contracts.Chunk{Type: contracts.ChunkMessage, Content: "Hello, Ada!", Node: "greet"},
		contracts.Chunk{Type: contracts.ChunkStatus, Message: "working"},
		contracts.Chunk{Type: contracts.ChunkDone})
	require.Equal(t, []string{
		`{"type":"start"}`, `{"type":"start-step"}`,
		`{"type":"text-start","id":"text-op1-s1"}`,
		`{"type":"text-delta","id":"text-op1-s1","delta":"Hel"}`,
		`{"type":"text-delta","id":"text-op1-s1","delta":"lo"}`,
		`{"type":"text-end","id":"text-op1-s1"}`,
		`{"type":"text-start","id":"message-1"}`, `{"type":"text-delta","id":"message-1","delta":"Hello, Ada!"}`, `{"type":"text-end","id":"message-1"}`,
		`{"type":"finish-step"}`, `{"type":"finish","finishReason":"stop"}`,
	}, got)
}

func TestMapTextEndedByDone(t *testing.T) {
	// A delta without its start starts the part; done ends the parts still open.
	got := lines(t, nil, text(contracts.ChunkTextDelta, "x"), contracts.Chunk{Type: contracts.ChunkDone})
	require.Equal(t, []string{`{"type":"start"}`, `{"type":"start-step"}`,
		`{"type":"text-start","id":"text-op1-s1"}`, `{"type":"text-delta","id":"text-op1-s1","delta":"x"}`,
		`{"type":"text-end","id":"text-op1-s1"}`, `{"type":"finish-step"}`, `{"type":"finish","finishReason":"stop"}`}, got)
}

func TestMapToolsAndApproval(t *testing.T) {
	got := lines(t, nil,
		contracts.Chunk{Type: contracts.ChunkToolCallStart, Tool: "lookup_order", ToolCallID: "call_1", Input: json.RawMessage(`{"orderId":"A-1001"}`)},
		contracts.Chunk{Type: contracts.ChunkToolCallResult, Tool: "lookup_order", ToolCallID: "call_1", Content: `{"status":"delivered"}`},
		approvalChunk(t), contracts.Chunk{Type: contracts.ChunkDone})
	require.Equal(t, []string{`{"type":"start"}`, `{"type":"start-step"}`,
		`{"type":"tool-input-start","toolCallId":"call_1","toolName":"lookup_order"}`,
		`{"type":"tool-input-available","toolCallId":"call_1","toolName":"lookup_order","input":{"orderId":"A-1001"}}`,
		`{"type":"tool-output-available","toolCallId":"call_1","output":{"status":"delivered"}}`,
		`{"type":"finish-step"}`, `{"type":"start-step"}`,
		`{"type":"tool-input-start","toolCallId":"call_2","toolName":"refund"}`,
		`{"type":"tool-input-available","toolCallId":"call_2","toolName":"refund","input":{"orderId":"A-1001"}}`,
		`{"type":"tool-approval-request","toolCallId":"call_2","approvalId":"human-1.tok_A"}`,
		`{"type":"finish-step"}`, `{"type":"finish","finishReason":"tool-calls"}`}, got)
}

func TestMapAnsweredApproval(t *testing.T) {
	call := contracts.Chunk{Type: contracts.ChunkToolCallStart, Tool: "refund", ToolCallID: "call_2", Input: json.RawMessage(`{"orderId":"A-1001"}`)}
	t.Run("approved", func(t *testing.T) {
		got := lines(t, map[string]bool{"call_2": true}, call,
			contracts.Chunk{Type: contracts.ChunkToolCallResult, Tool: "refund", ToolCallID: "call_2", Content: `{"refundId":"R-5001"}`},
			contracts.Chunk{Type: contracts.ChunkDone})
		// The client holds the call: its output updates it, outside any step of this response.
		require.Equal(t, []string{`{"type":"start"}`,
			`{"type":"tool-output-available","toolCallId":"call_2","output":{"refundId":"R-5001"}}`,
			`{"type":"finish","finishReason":"stop"}`}, got)
	})
	t.Run("denied", func(t *testing.T) {
		got := lines(t, map[string]bool{"call_2": false}, call,
			contracts.Chunk{Type: contracts.ChunkToolCallResult, Tool: "refund", ToolCallID: "call_2", Content: "Tool call denied by user.", IsError: true},
			contracts.Chunk{Type: contracts.ChunkDone})
		require.Equal(t, []string{`{"type":"start"}`, `{"type":"tool-output-denied","toolCallId":"call_2"}`,
			`{"type":"finish","finishReason":"stop"}`}, got)
	})
	t.Run("reattached", func(t *testing.T) {
		// A reconnect replays to a message without the call: its input is announced.
		got := lines(t, nil, call,
			contracts.Chunk{Type: contracts.ChunkToolCallResult, Tool: "refund", ToolCallID: "call_2", Content: "Tool call denied by user.", IsError: true})
		require.Equal(t, []string{`{"type":"start"}`, `{"type":"start-step"}`,
			`{"type":"tool-input-start","toolCallId":"call_2","toolName":"refund"}`,
			`{"type":"tool-input-available","toolCallId":"call_2","toolName":"refund","input":{"orderId":"A-1001"}}`,
			`{"type":"tool-output-error","toolCallId":"call_2","errorText":"Tool call denied by user."}`}, got)
	})
}

func TestMapToolErrorAndOutputs(t *testing.T) {
	got := lines(t, nil,
		contracts.Chunk{Type: contracts.ChunkToolCallResult, Tool: "t", ToolCallID: "c1", Content: "plain text"},
		contracts.Chunk{Type: contracts.ChunkToolCallResult, Tool: "t", ToolCallID: "c2", Content: "x", StructuredContent: json.RawMessage(`{"n":1}`)},
		contracts.Chunk{Type: contracts.ChunkToolCallError, Tool: "t", ToolCallID: "c3", Message: "raw", Failure: &contracts.Failure{Code: contracts.CodeInvalidToolCall, Message: "The tool failed."}})
	require.Equal(t, []string{`{"type":"start"}`, `{"type":"start-step"}`,
		`{"type":"tool-input-start","toolCallId":"c1","toolName":"t"}`, `{"type":"tool-input-available","toolCallId":"c1","toolName":"t","input":{}}`,
		`{"type":"tool-output-available","toolCallId":"c1","output":"plain text"}`,
		`{"type":"finish-step"}`, `{"type":"start-step"}`,
		`{"type":"tool-input-start","toolCallId":"c2","toolName":"t"}`, `{"type":"tool-input-available","toolCallId":"c2","toolName":"t","input":{}}`,
		`{"type":"tool-output-available","toolCallId":"c2","output":{"n":1}}`,
		`{"type":"finish-step"}`, `{"type":"start-step"}`,
		`{"type":"tool-input-start","toolCallId":"c3","toolName":"t"}`, `{"type":"tool-input-available","toolCallId":"c3","toolName":"t","input":{}}`,
		`{"type":"tool-output-error","toolCallId":"c3","errorText":"The tool failed."}`}, got)
}

func TestMapStructuredData(t *testing.T) {
	sd := func(kind contracts.StructuredKind, path string, f func(*contracts.Chunk)) contracts.Chunk {
		c := contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: "st1", DataType: "ticket", Kind: kind, Path: path}
		f(&c)
		return c
	}
	got := lines(t, nil,
		sd(contracts.StructuredSet, "title", func(c *contracts.Chunk) { c.Value = json.RawMessage(`"Billing question"`) }),
		sd(contracts.StructuredTextDelta, "summary", func(c *contracts.Chunk) { c.Delta = "My " }),
		sd(contracts.StructuredTextDelta, "summary", func(c *contracts.Chunk) { c.Delta = "bill" }),
		sd(contracts.StructuredAppend, "tags", func(c *contracts.Chunk) { c.Items = json.RawMessage(`["billing"]`) }),
		sd(contracts.StructuredFinal, "", func(c *contracts.Chunk) { c.Data = json.RawMessage(`{"title":"T","tags":[]}`) }),
		contracts.Chunk{Type: contracts.ChunkStructuredInvalidated, StreamID: "st1"},
		contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: "st2", Kind: contracts.StructuredFinal, Data: json.RawMessage(`{"a":1}`)})
	require.Equal(t, []string{`{"type":"start"}`, `{"type":"start-step"}`,
		`{"type":"data-ticket","id":"st1","data":{"title":"Billing question"}}`,
		`{"type":"data-ticket","id":"st1","data":{"summary":"My ","title":"Billing question"}}`,
		`{"type":"data-ticket","id":"st1","data":{"summary":"My bill","title":"Billing question"}}`,
		`{"type":"data-ticket","id":"st1","data":{"summary":"My bill","tags":["billing"],"title":"Billing question"}}`,
		`{"type":"data-ticket","id":"st1","data":{"tags":[],"title":"T"}}`,
		`{"type":"data-ticket","id":"st1","data":null}`,
		`{"type":"data-structured","id":"st2","data":{"a":1}}`}, got)
}

func TestMapQuestions(t *testing.T) {
	ask := func(in contracts.InterruptInput) contracts.Chunk {
		return protocol.InterruptChunk(contracts.PendingRequest{RequestID: "human-9", Token: "tok", Node: "n", HookID: in.ID, Input: in})
	}
	opts := []contracts.Option{{ID: "open", Label: "Open"}, {ID: "revise", Label: "Revise"}}
	for _, tc := range []struct {
		name  string
		in    contracts.InterruptInput
		input string
	}{
		{"text", contracts.InterruptInput{Kind: contracts.InterruptText, Question: "What is your name?", ID: "name", Options: []contracts.Option{}},
			`{"question":"What is your name?","kind":"text","schema":{"minLength":1,"type":"string"},"node":"n"}`},
		{"choice", contracts.InterruptInput{Kind: contracts.InterruptChoice, Question: "Open it?", ID: "confirm", Options: opts},
			`{"question":"Open it?","kind":"choice","options":[{"id":"open","label":"Open"},{"id":"revise","label":"Revise"}],"schema":{"enum":["open","revise"],"type":"string"},"node":"n"}`},
		{"multi-choice", contracts.InterruptInput{Kind: contracts.InterruptMultiChoice, Multiple: true, Question: "Which?", Options: opts},
			`{"question":"Which?","kind":"multi-choice","options":[{"id":"open","label":"Open"},{"id":"revise","label":"Revise"}],"schema":{"items":{"enum":["open","revise"],"type":"string"},"minItems":1,"type":"array","uniqueItems":true},"node":"n"}`},
		{"custom", contracts.InterruptInput{Kind: contracts.InterruptCustom, Question: "Pick a plan", ID: "plan", Contract: "plan", SchemaID: "plan", SchemaVersion: "1",
			Request: json.RawMessage(`{"choices":["basic","pro"]}`), Options: []contracts.Option{}},
			`{"question":"Pick a plan","kind":"custom","request":{"choices":["basic","pro"]},"contract":"plan","schemaId":"plan","schemaVersion":"1","node":"n"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lines(t, nil, ask(tc.in), contracts.Chunk{Type: contracts.ChunkDone})
			require.Equal(t, []string{`{"type":"start"}`, `{"type":"start-step"}`,
				`{"type":"tool-input-start","toolCallId":"human-9.tok","toolName":"kortyx_ask"}`,
				`{"type":"tool-input-available","toolCallId":"human-9.tok","toolName":"kortyx_ask","input":` + tc.input + `}`,
				`{"type":"finish-step"}`, `{"type":"finish","finishReason":"tool-calls"}`}, got)
		})
	}
}

func TestMapErrorsAndCancel(t *testing.T) {
	got := lines(t, nil,
		contracts.Chunk{Type: contracts.ChunkError, Message: "raw", Failure: &contracts.Failure{Code: contracts.CodeProviderHTTPError, Message: "Provider request failed (HTTP 400)."}},
		contracts.Chunk{Type: contracts.ChunkDone})
	require.Equal(t, []string{`{"type":"start"}`,
		`{"type":"error","errorText":"PROVIDER_HTTP_ERROR: Provider request failed (HTTP 400)."}`,
		`{"type":"finish","finishReason":"error"}`}, got)
	cancelled := []contracts.Chunk{{Type: contracts.ChunkCancelled, RunID: "run-1", Reason: "stopped"}, {Type: contracts.ChunkDone}}
	got = lines(t, nil, cancelled...)
	require.Equal(t, []string{`{"type":"start"}`, `{"type":"abort","reason":"stopped"}`, `{"type":"finish","finishReason":"other"}`}, got)

	// The response to a cancel (this request's kortyx_ask output-error) ends the question: a step
	// after it with the call's output-error again, the client's errorText (the reason when it
	// gave none: errorText is required).
	for _, tc := range []struct{ errorText, want string }{{"not telling", "not telling"}, {"", "stopped"}} {
		m := newMapper(nil)
		m.cancel = &cancelledCall{toolCallID: "human-1.tok", errorText: tc.errorText}
		got = mapped(t, m, cancelled...)
		require.Equal(t, []string{`{"type":"start"}`, `{"type":"start-step"}`,
			`{"type":"tool-output-error","toolCallId":"human-1.tok","errorText":"` + tc.want + `"}`,
			`{"type":"abort","reason":"stopped"}`, `{"type":"finish-step"}`, `{"type":"finish","finishReason":"other"}`}, got)
	}
	// Content before the cancel (none comes in practice): its step ends first.
	m := newMapper(nil)
	m.cancel = &cancelledCall{toolCallID: "human-1.tok", errorText: "no"}
	got = mapped(t, m, append([]contracts.Chunk{text(contracts.ChunkTextDelta, "x")}, cancelled...)...)
	require.Equal(t, []string{`{"type":"start"}`, `{"type":"start-step"}`, `{"type":"text-start","id":"text-op1-s1"}`,
		`{"type":"text-delta","id":"text-op1-s1","delta":"x"}`, `{"type":"text-end","id":"text-op1-s1"}`, `{"type":"finish-step"}`, `{"type":"start-step"}`,
		`{"type":"tool-output-error","toolCallId":"human-1.tok","errorText":"no"}`, `{"type":"abort","reason":"stopped"}`,
		`{"type":"finish-step"}`, `{"type":"finish","finishReason":"other"}`}, got)
}

func TestQuestionIDs(t *testing.T) {
	req, tok, ok := parseQuestionID(questionID("human-0b7c", "a-b_c"))
	require.True(t, ok)
	require.Equal(t, []string{"human-0b7c", "a-b_c"}, []string{req, tok})
	for _, bad := range []string{"", "x", ".x", "x."} {
		_, _, ok := parseQuestionID(bad)
		require.False(t, ok, bad)
	}
	require.False(t, strings.Contains(questionID("human-1", "t"), " "))
}

func TestMapStepAfterTools(t *testing.T) {
	// Text after a tool's output is the model's next step.
	got := lines(t, nil,
		contracts.Chunk{Type: contracts.ChunkToolCallStart, Tool: "t", ToolCallID: "c1"},
		contracts.Chunk{Type: contracts.ChunkToolCallResult, Tool: "t", ToolCallID: "c1", Content: `1`},
		text(contracts.ChunkTextStart, ""), text(contracts.ChunkTextDelta, "ok"), text(contracts.ChunkTextEnd, ""),
		contracts.Chunk{Type: contracts.ChunkDone})
	require.Equal(t, []string{`{"type":"start"}`, `{"type":"start-step"}`,
		`{"type":"tool-input-start","toolCallId":"c1","toolName":"t"}`, `{"type":"tool-input-available","toolCallId":"c1","toolName":"t","input":{}}`,
		`{"type":"tool-output-available","toolCallId":"c1","output":1}`,
		`{"type":"finish-step"}`, `{"type":"start-step"}`,
		`{"type":"text-start","id":"text-op1-s1"}`, `{"type":"text-delta","id":"text-op1-s1","delta":"ok"}`, `{"type":"text-end","id":"text-op1-s1"}`,
		`{"type":"finish-step"}`, `{"type":"finish","finishReason":"stop"}`}, got)
}
