package agui_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/agui"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/stretchr/testify/require"
)

func textChunk(typ contracts.ChunkType, node, delta string) contracts.Chunk {
	return contracts.Chunk{Type: typ, Node: node, OpID: "op-" + node, SegmentID: "s1", Delta: delta}
}

func question(in contracts.InterruptInput) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: "human-1", ResumeToken: "tok", Node: "ask", ID: in.ID, Input: mustJSON(in)}
}

// TestMapping checks the exact events of chunk sequences, and feeds each body to AG-UI's own
// client (HttpAgent over a fetch that answers with the body: its schemas, its sequence verifier,
// its reducer), which must accept it and build the messages, state and interrupts listed.
func TestMapping(t *testing.T) {
	end := contracts.Chunk{Type: contracts.ChunkDone}
	approvalMeta := mustJSON(map[string]any{"tool": "refund", "toolCallId": "call_2", "input": json.RawMessage(`{"orderId":"A-1"}`)})
	approval := contracts.InterruptInput{Kind: contracts.InterruptChoice, Question: "Approve refund?", ID: "tool:call_2", Meta: approvalMeta,
		Options: []contracts.Option{{ID: "approve", Label: "Approve"}, {ID: "deny", Label: "Deny"}}}
	multi := contracts.InterruptInput{Kind: contracts.InterruptMultiChoice, Question: "Which?", Options: []contracts.Option{{ID: "x", Label: "X"}, {ID: "y", Label: "Y"}}}
	custom := contracts.InterruptInput{Kind: contracts.InterruptCustom, Question: "Pick a plan", Contract: "plan", Request: json.RawMessage(`{"choices":["basic","pro"]}`)}
	planSchema := json.RawMessage(`{"type":"object","required":["plan"]}`)
	sd := func(stream string, kind contracts.StructuredKind, path, value, delta string) contracts.Chunk {
		c := contracts.Chunk{Type: contracts.ChunkStructuredData, Node: "n", StreamID: stream, DataType: "ticket", Kind: kind, Path: path, Delta: delta}
		if value != "" {
			c.Value = json.RawMessage(value)
		}
		return c
	}
	const started = `{"type":"RUN_STARTED","threadId":"thread-1","runId":"run-1"}`
	const success = `{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1","outcome":{"type":"success"}}`
	cases := []struct {
		name     string
		state    string
		chunks   []contracts.Chunk
		events   []string
		messages string // the client's messages after the run: [[role, content], ...]
		clState  string // the client's state after the run
		pending  string // the client's pending interrupts
		error    bool   // the client's run failed
	}{
		{name: "texts of two nodes", chunks: []contracts.Chunk{textChunk(contracts.ChunkTextStart, "a", ""), textChunk(contracts.ChunkTextDelta, "a", "Hel"),
			textChunk(contracts.ChunkTextDelta, "a", "lo"), textChunk(contracts.ChunkTextEnd, "a", ""), {Type: contracts.ChunkTransition, TransitionTo: "b"},
			{Type: contracts.ChunkMessage, Node: "b", Content: "Bye."}, textChunk(contracts.ChunkTextDelta, "b", "open"), end},
			events: []string{started, `{"type":"STEP_STARTED","stepName":"a"}`,
				`{"type":"TEXT_MESSAGE_START","messageId":"run-1-1","role":"assistant"}`,
				`{"type":"TEXT_MESSAGE_CONTENT","messageId":"run-1-1","delta":"Hel"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"run-1-1","delta":"lo"}`,
				`{"type":"TEXT_MESSAGE_END","messageId":"run-1-1"}`, `{"type":"STEP_FINISHED","stepName":"a"}`, `{"type":"STEP_STARTED","stepName":"b"}`,
				`{"type":"TEXT_MESSAGE_START","messageId":"run-1-2","role":"assistant"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"run-1-2","delta":"Bye."}`,
				`{"type":"TEXT_MESSAGE_END","messageId":"run-1-2"}`, `{"type":"TEXT_MESSAGE_START","messageId":"run-1-3","role":"assistant"}`,
				`{"type":"TEXT_MESSAGE_CONTENT","messageId":"run-1-3","delta":"open"}`, `{"type":"TEXT_MESSAGE_END","messageId":"run-1-3"}`,
				`{"type":"STEP_FINISHED","stepName":"b"}`, success},
			messages: `[["assistant","Hello"],["assistant","Bye."],["assistant","open"]]`, clState: `{}`, pending: `[]`},
		{name: "tool calls", chunks: []contracts.Chunk{
			{Type: contracts.ChunkToolCallStart, Node: "n", Tool: "lookup", ToolCallID: "c1", Input: json.RawMessage(`{"a":1}`)},
			{Type: contracts.ChunkToolCallResult, Node: "n", Tool: "lookup", ToolCallID: "c1", Content: "{\"ok\":true}", StructuredContent: json.RawMessage(`{"ok":true}`)},
			{Type: contracts.ChunkToolCallStart, Node: "n", Tool: "boom", ToolCallID: "c2"},
			{Type: contracts.ChunkToolCallError, Node: "n", Tool: "boom", ToolCallID: "c2", Message: "x", Failure: &contracts.Failure{Code: contracts.CodeUnknownTool, Message: "The tool failed."}},
			end},
			events: []string{started, `{"type":"STEP_STARTED","stepName":"n"}`,
				`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"lookup"}`, `{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"a\":1}"}`,
				`{"type":"TOOL_CALL_END","toolCallId":"c1"}`, `{"type":"TOOL_CALL_RESULT","messageId":"run-1-1","toolCallId":"c1","role":"tool","content":"{\"ok\":true}"}`,
				`{"type":"TOOL_CALL_START","toolCallId":"c2","toolCallName":"boom"}`, `{"type":"TOOL_CALL_ARGS","toolCallId":"c2","delta":"{}"}`,
				`{"type":"TOOL_CALL_END","toolCallId":"c2"}`, `{"type":"TOOL_CALL_RESULT","messageId":"run-1-2","toolCallId":"c2","role":"tool","content":"The tool failed."}`,
				`{"type":"STEP_FINISHED","stepName":"n"}`, success},
			messages: `[["assistant",null],["tool","{\"ok\":true}"],["assistant",null],["tool","The tool failed."]]`, clState: `{}`, pending: `[]`},
		{name: "structured data", state: `{"keep":1}`, chunks: []contracts.Chunk{sd("st1", contracts.StructuredSet, "title", `"T"`, ""),
			sd("st1", contracts.StructuredTextDelta, "summary", "", "hi"), sd("s/2~x", contracts.StructuredSet, "n", `1`, ""),
			{Type: contracts.ChunkStructuredInvalidated, StreamID: "s/2~x"}, end},
			events: []string{started, `{"type":"STEP_STARTED","stepName":"n"}`, `{"type":"STATE_SNAPSHOT","snapshot":{"keep":1,"st1":{"title":"T"}}}`,
				`{"type":"STATE_DELTA","delta":[{"op":"add","path":"/st1","value":{"summary":"hi","title":"T"}}]}`,
				`{"type":"STATE_DELTA","delta":[{"op":"add","path":"/s~12~0x","value":{"n":1}}]}`,
				`{"type":"STATE_DELTA","delta":[{"op":"remove","path":"/s~12~0x"}]}`, `{"type":"STEP_FINISHED","stepName":"n"}`, success},
			messages: `[]`, clState: `{"keep":1,"st1":{"summary":"hi","title":"T"}}`, pending: `[]`},
		{name: "multi-choice question", chunks: []contracts.Chunk{question(multi), {Type: contracts.ChunkCheckpoint, ID: "cp-1"}, end},
			events: []string{started, `{"type":"STEP_STARTED","stepName":"ask"}`, `{"type":"STEP_FINISHED","stepName":"ask"}`,
				`{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1","outcome":{"type":"interrupt","interrupts":[{"id":"human-1.tok","reason":"input_required","message":"Which?","responseSchema":{"items":{"enum":["x","y"],"type":"string"},"minItems":1,"type":"array","uniqueItems":true},"metadata":{"kind":"multi-choice","options":[{"id":"x","label":"X"},{"id":"y","label":"Y"}],"node":"ask"}}]}}`},
			messages: `[]`, clState: `{}`,
			pending: `[{"id":"human-1.tok","reason":"input_required","message":"Which?","responseSchema":{"items":{"enum":["x","y"],"type":"string"},"minItems":1,"type":"array","uniqueItems":true},"metadata":{"kind":"multi-choice","options":[{"id":"x","label":"X"},{"id":"y","label":"Y"}],"node":"ask"}}]`},
		{name: "custom question", chunks: []contracts.Chunk{question(custom), end},
			events: []string{started, `{"type":"STEP_STARTED","stepName":"ask"}`, `{"type":"STEP_FINISHED","stepName":"ask"}`,
				`{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1","outcome":{"type":"interrupt","interrupts":[{"id":"human-1.tok","reason":"input_required","message":"Pick a plan","responseSchema":{"type":"object","required":["plan"]},"metadata":{"kind":"custom","node":"ask","request":{"choices":["basic","pro"]},"contract":"plan"}}]}}`},
			messages: `[]`, clState: `{}`,
			pending: `[{"id":"human-1.tok","reason":"input_required","message":"Pick a plan","responseSchema":{"type":"object","required":["plan"]},"metadata":{"kind":"custom","node":"ask","request":{"choices":["basic","pro"]},"contract":"plan"}}]`},
		{name: "tool approval", chunks: []contracts.Chunk{question(approval), end},
			events: []string{started, `{"type":"STEP_STARTED","stepName":"ask"}`, `{"type":"TOOL_CALL_START","toolCallId":"call_2","toolCallName":"refund"}`,
				`{"type":"TOOL_CALL_ARGS","toolCallId":"call_2","delta":"{\"orderId\":\"A-1\"}"}`, `{"type":"TOOL_CALL_END","toolCallId":"call_2"}`,
				`{"type":"STEP_FINISHED","stepName":"ask"}`,
				`{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1","outcome":{"type":"interrupt","interrupts":[{"id":"human-1.tok","reason":"tool_approval","message":"Approve refund?","toolCallId":"call_2","responseSchema":{"type":"object","properties":{"approved":{"type":"boolean"}},"required":["approved"]},"metadata":{"kind":"approval","node":"ask","tool":"refund","input":{"orderId":"A-1"}}}]}}`},
			messages: `[["assistant",null]]`, clState: `{}`,
			pending: `[{"id":"human-1.tok","reason":"tool_approval","message":"Approve refund?","toolCallId":"call_2","responseSchema":{"type":"object","properties":{"approved":{"type":"boolean"}},"required":["approved"]},"metadata":{"kind":"approval","node":"ask","tool":"refund","input":{"orderId":"A-1"}}}]`},
		{name: "error", chunks: []contracts.Chunk{textChunk(contracts.ChunkTextDelta, "a", "Hi"),
			{Type: contracts.ChunkError, Message: "raw", Failure: &contracts.Failure{Code: contracts.CodeProviderHTTPError, Message: "Provider request failed (HTTP 400)."}}, end},
			events: []string{started, `{"type":"STEP_STARTED","stepName":"a"}`, `{"type":"TEXT_MESSAGE_START","messageId":"run-1-1","role":"assistant"}`,
				`{"type":"TEXT_MESSAGE_CONTENT","messageId":"run-1-1","delta":"Hi"}`,
				`{"type":"RUN_ERROR","message":"Provider request failed (HTTP 400).","code":"PROVIDER_HTTP_ERROR"}`},
			messages: `[["assistant","Hi"]]`, clState: `{}`, pending: `[]`},
		{name: "cancelled", chunks: []contracts.Chunk{{Type: contracts.ChunkCancelled, RunID: "run-x", Reason: "Execution cancelled."}, end},
			events:   []string{started, `{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1","outcome":{"type":"cancelled"}}`},
			messages: `[]`, clState: `{}`, pending: `[]`},
	}
	p := nodeclient.Start(t, "agui.mjs", nil)
	for _, tc := range cases {
		body, err := agui.Body("thread-1", "run-1", json.RawMessage(tc.state), planSchema, tc.chunks...)
		require.NoError(t, err, tc.name)
		want := "data: " + strings.Join(tc.events, "\n\ndata: ") + "\n\n"
		require.Equal(t, normalize(t, want), normalize(t, body), tc.name)

		p.Send(map[string]any{"op": "verify", "name": tc.name, "body": body})
		e := p.Next(time.Minute)
		for e.Name == "event" {
			e = p.Next(time.Minute)
		}
		require.Equal(t, "done", e.Name, "%s", e.Raw)
		var d struct {
			done
			Pending  json.RawMessage `json:"pendingInterrupts"`
			Messages []struct {
				Role    string
				Content *string
			}
			State json.RawMessage
		}
		e.Decode(t, &d)
		require.Equal(t, tc.name, d.Name)
		require.Nil(t, d.Error, "%s: the client refused the body", tc.name)
		require.Equal(t, types(events(t, body)), d.Types, tc.name)
		var msgs [][]any
		for _, m := range d.Messages {
			if m.Role == "user" {
				continue
			}
			var content any
			if m.Content != nil {
				content = *m.Content
			}
			msgs = append(msgs, []any{m.Role, content})
		}
		got, _ := json.Marshal(msgs)
		if msgs == nil {
			got = []byte("[]")
		}
		require.JSONEq(t, tc.messages, string(got), tc.name)
		require.JSONEq(t, tc.clState, string(d.State), tc.name)
		require.JSONEq(t, tc.pending, string(d.Pending), tc.name)
	}
	p.Wait(time.Minute)
}

// normalize re-encodes each event of an SSE body with sorted keys, so that two bodies compare
// by their JSON values in their order.
func normalize(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, e := range events(t, body) {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
}

func TestPrompt(t *testing.T) {
	for _, tc := range []struct{ name, body, want, err string }{
		{"a string", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":"hi"}]}`, "hi", ""},
		{"text parts", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":[{"type":"text","text":"one"},{"type":"image","source":{"type":"url","value":"u"}},{"type":"text","text":"two"}]}]}`, "one\ntwo", ""},
		{"the last user message", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":"old"},{"id":"2","role":"assistant","content":"a"},{"id":"3","role":"user","content":"new"},{"id":"4","role":"assistant","content":"partial"}]}`, "new", ""},
		{"no text", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"url","value":"u"}}]}]}`, "", "The last user message has no text to send."},
		{"a runId with a space", `{"threadId":"t","runId":"r 1","messages":[]}`, "", "runId must use only visible ASCII characters (no spaces)."},
	} {
		got, err := agui.Prompt(tc.body)
		if tc.err != "" {
			require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err), tc.name)
			require.Equal(t, tc.err, contracts.FailureOf(err).Message, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}
}
