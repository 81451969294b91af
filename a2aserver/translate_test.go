package a2aserver

import (
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
)

// The events of a run's chunks, and the task they fold into: exact JSON.
func TestTranslate(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	turn := 0
	for _, c := range []struct {
		name   string
		chunks []contracts.Chunk
		events []string
		task   string
	}{{
		name: "text deltas, a status, a tool call, then completed",
		chunks: []contracts.Chunk{
			{Type: contracts.ChunkTextStart, OpID: "op", SegmentID: "s1"},
			{Type: contracts.ChunkTextDelta, OpID: "op", SegmentID: "s1", Delta: "Hel"},
			{Type: contracts.ChunkStatus, Message: "retrying"},
			{Type: contracts.ChunkTextDelta, OpID: "op", SegmentID: "s1", Delta: "lo"},
			{Type: contracts.ChunkTextEnd, OpID: "op", SegmentID: "s1"},
			{Type: contracts.ChunkToolCallStart, Tool: "lookup", ToolCallID: "c1", Input: raw(`{"id":1}`)},
			{Type: contracts.ChunkMessage, Content: "Bye"},
			{Type: contracts.ChunkCheckpoint, ID: "cp", TurnIndex: &turn},
			{Type: contracts.ChunkDone},
		},
		events: []string{
			`{"kind":"artifact-update","taskId":"t","contextId":"s","artifact":{"artifactId":"text-op/s1","parts":[{"kind":"text","text":"Hel"}]}}`,
			`{"kind":"status-update","taskId":"t","contextId":"s","final":false,"status":{"state":"working","message":{"kind":"message","messageId":"t/3","role":"agent","taskId":"t","contextId":"s","parts":[{"kind":"text","text":"retrying"}]}}}`,
			`{"kind":"artifact-update","taskId":"t","contextId":"s","append":true,"artifact":{"artifactId":"text-op/s1","parts":[{"kind":"text","text":"lo"}]}}`,
			`{"kind":"status-update","taskId":"t","contextId":"s","final":false,"status":{"state":"working","message":{"kind":"message","messageId":"t/6","role":"agent","taskId":"t","contextId":"s","parts":[{"kind":"data","data":{"type":"tool-call-start","tool":"lookup","toolCallId":"c1","input":{"id":1}}}]}}}`,
			`{"kind":"artifact-update","taskId":"t","contextId":"s","artifact":{"artifactId":"message-7","parts":[{"kind":"text","text":"Bye"}]}}`,
			`{"kind":"status-update","taskId":"t","contextId":"s","final":true,"status":{"state":"completed","message":{"kind":"message","messageId":"t/9","role":"agent","taskId":"t","contextId":"s","parts":[{"kind":"text","text":"Hello\nBye"}]}}}`,
		},
		task: `{"kind":"task","id":"t","contextId":"s","status":{"state":"completed","message":{"kind":"message","messageId":"t/9","role":"agent","taskId":"t","contextId":"s","parts":[{"kind":"text","text":"Hello\nBye"}]}},
			"artifacts":[{"artifactId":"text-op/s1","parts":[{"kind":"text","text":"Hello"}]},{"artifactId":"message-7","parts":[{"kind":"text","text":"Bye"}]}],
			"history":[{"kind":"message","messageId":"t/9","role":"agent","taskId":"t","contextId":"s","parts":[{"kind":"text","text":"Hello\nBye"}]}]}`,
	}, {
		name: "structured data, then a multi-choice question and a custom one",
		chunks: []contracts.Chunk{
			{Type: contracts.ChunkStructuredData, StreamID: "d", DataType: "ticket", Kind: contracts.StructuredSet, Path: "title", Value: raw(`"Refund"`)},
			{Type: contracts.ChunkStructuredData, StreamID: "d", DataType: "ticket", Kind: contracts.StructuredFinal, Data: raw(`{"title":"Refund"}`)},
			{Type: contracts.ChunkInterrupt, RequestID: "r1", ResumeToken: "secret", Input: raw(`{"kind":"multi-choice","multiple":true,"question":"Which?","options":[{"id":"a","label":"A"},{"id":"b","label":"B"}]}`)},
			{Type: contracts.ChunkInterrupt, RequestID: "r2", ResumeToken: "secret", Input: raw(`{"kind":"custom","multiple":false,"contract":"plan","request":{"x":1},"options":[]}`)},
			{Type: contracts.ChunkDone},
		},
		events: []string{
			`{"kind":"artifact-update","taskId":"t","contextId":"s","artifact":{"artifactId":"data-d","name":"ticket","parts":[{"kind":"data","data":{"type":"structured-data","streamId":"d","dataType":"ticket","kind":"set","path":"title","value":"Refund"}}]}}`,
			`{"kind":"artifact-update","taskId":"t","contextId":"s","artifact":{"artifactId":"data-d","name":"ticket","parts":[{"kind":"data","data":{"type":"structured-data","streamId":"d","dataType":"ticket","kind":"final","data":{"title":"Refund"}}}]}}`,
			`{"kind":"status-update","taskId":"t","contextId":"s","final":true,"status":{"state":"input-required","message":{"kind":"message","messageId":"t/5","role":"agent","taskId":"t","contextId":"s","parts":[
				{"kind":"text","text":"Which?"},
				{"kind":"data","data":{"kind":"multi-choice","multiple":true,"question":"Which?","options":[{"id":"a","label":"A"},{"id":"b","label":"B"}],"requestId":"r1",
				 "schema":{"type":"array","items":{"type":"string","enum":["a","b"]},"minItems":1,"uniqueItems":true}}},
				{"kind":"text","text":"Please answer."},
				{"kind":"data","data":{"kind":"custom","multiple":false,"contract":"plan","request":{"x":1},"options":[],"requestId":"r2","schema":{"type":"object"}}}]}}}`,
		},
	}, {
		name: "text of a retried model pass",
		chunks: []contracts.Chunk{
			{Type: contracts.ChunkTextDelta, OpID: "op", SegmentID: "s1", Delta: "Wro"},
			{Type: contracts.ChunkTextInvalidated, OpID: "op", SegmentID: "s1"},
			{Type: contracts.ChunkTextDelta, OpID: "op", SegmentID: "s1~2", Delta: "Right"},
			{Type: contracts.ChunkDone},
		},
		events: []string{
			`{"kind":"artifact-update","taskId":"t","contextId":"s","artifact":{"artifactId":"text-op/s1","parts":[{"kind":"text","text":"Wro"}]}}`,
			`{"kind":"artifact-update","taskId":"t","contextId":"s","artifact":{"artifactId":"text-op/s1","parts":[{"kind":"text","text":""}]}}`,
			`{"kind":"artifact-update","taskId":"t","contextId":"s","artifact":{"artifactId":"text-op/s1~2","parts":[{"kind":"text","text":"Right"}]}}`,
			`{"kind":"status-update","taskId":"t","contextId":"s","final":true,"status":{"state":"completed","message":{"kind":"message","messageId":"t/4","role":"agent","taskId":"t","contextId":"s","parts":[{"kind":"text","text":"Right"}]}}}`,
		},
		task: `{"kind":"task","id":"t","contextId":"s","status":{"state":"completed","message":{"kind":"message","messageId":"t/4","role":"agent","taskId":"t","contextId":"s","parts":[{"kind":"text","text":"Right"}]}},
			"artifacts":[{"artifactId":"text-op/s1","parts":[{"kind":"text","text":""}]},{"artifactId":"text-op/s1~2","parts":[{"kind":"text","text":"Right"}]}],
			"history":[{"kind":"message","messageId":"t/4","role":"agent","taskId":"t","contextId":"s","parts":[{"kind":"text","text":"Right"}]}]}`,
	}, {
		name: "a limit reached",
		chunks: []contracts.Chunk{
			{Type: contracts.ChunkLimitReached, RunID: "t", Limit: "maxNodeExecutions", Maximum: 2, Consumed: 2},
		},
		events: []string{
			`{"kind":"status-update","taskId":"t","contextId":"s","final":false,"status":{"state":"working","message":{"kind":"message","messageId":"t/1","role":"agent","taskId":"t","contextId":"s","parts":[
				{"kind":"data","data":{"type":"limit-reached","runId":"t","limit":"maxNodeExecutions","maximum":2,"consumed":2}}]}}}`,
		},
	}, {
		name: "a failure",
		chunks: []contracts.Chunk{
			{Type: contracts.ChunkError, Message: "An unexpected error occurred.", Failure: &contracts.Failure{Version: 1, Code: contracts.CodeExecutionFailed, Category: "workflow", Message: "An unexpected error occurred."}},
			{Type: contracts.ChunkDone},
		},
		events: []string{
			`{"kind":"status-update","taskId":"t","contextId":"s","final":true,"status":{"state":"failed","message":{"kind":"message","messageId":"t/2","role":"agent","taskId":"t","contextId":"s","parts":[
				{"kind":"text","text":"An unexpected error occurred."},
				{"kind":"data","data":{"version":1,"code":"EXECUTION_FAILED","category":"workflow","message":"An unexpected error occurred.","retryable":false}}]}}}`,
		},
	}} {
		tr := newTranslator("t", "s")
		task := &a2a.Task{ID: "t", ContextID: "s"}
		var got []string
		for i, ch := range c.chunks {
			for _, ev := range tr.events(stream.Entry{Offset: int64(i + 1), Chunk: ch}) {
				b, err := json.Marshal(ev)
				require.NoError(t, err)
				got = append(got, string(b))
				fold(task, ev, nil)
			}
		}
		require.Len(t, got, len(c.events), "%s: %v", c.name, got)
		for i := range got {
			require.JSONEq(t, c.events[i], got[i], "%s: event %d", c.name, i)
		}
		if c.task != "" {
			b, err := json.Marshal(task)
			require.NoError(t, err)
			require.JSONEq(t, c.task, string(b), c.name)
		}
	}
}

// An answer becomes the user message that answers the question in a task's history.
func TestAnswerMessage(t *testing.T) {
	for _, c := range []struct {
		r    contracts.Response
		part string
	}{
		{contracts.Response{RequestID: "r", Text: "Ada"}, `{"kind":"text","text":"Ada"}`},
		{contracts.Response{RequestID: "r", Selected: []string{"a", "b"}}, `{"kind":"data","data":{"selected":["a","b"]}}`},
		{contracts.Response{RequestID: "r", Value: json.RawMessage(`{"plan":"pro"}`)}, `{"kind":"data","data":{"plan":"pro"}}`},
		{contracts.Response{RequestID: "r", Cancel: true}, `{"kind":"data","data":{"cancel":true}}`},
	} {
		b, err := json.Marshal(answerMessage("t", "s", c.r))
		require.NoError(t, err)
		require.JSONEq(t, `{"kind":"message","messageId":"t/answer/r","role":"user","taskId":"t","contextId":"s","parts":[`+c.part+`]}`, string(b))
	}
}
