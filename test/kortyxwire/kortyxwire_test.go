package kortyxwire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadFollowsKortyxRule(t *testing.T) {
	body := ": keep-alive\n\n" +
		"data: {\"type\":\"session\",\"sessionId\":\"s\"}\n\n" +
		"id: 1\ndata: {\"type\":\"text-delta\",\"delta\":\"lost\"}\n\n" + // an id line first: dropped whole
		"data: {\"type\":\"text-delta\",\"delta\":\"h\u00e9\"}\n\n" +
		"event: x\n\n" +
		"data: {\"type\":\"resume-rejected\",\"requestId\":\"q\"}\n\n" + // a type outside the schema is handed on

		"data: {\"type\":\"done\"}\n\n" +
		"data: {\"type\":\"message\",\"content\":\"after done\"}\n\n"
	for _, size := range []int{1, 2, 3, 7, 4096} {
		got, err := Read(strings.NewReader(body), size)
		require.NoError(t, err, "read size %d", size)
		require.Equal(t, []Chunk{{"type": "session", "sessionId": "s"}, {"type": "text-delta", "delta": "h\u00e9"},
			{"type": "resume-rejected", "requestId": "q"}, {"type": "done"}}, got, "read size %d", size)
	}
	got, err := Read(strings.NewReader("data: {\"type\":\"status\",\"message\":\"m\"}\n\ndata: [DONE]\n\n"), 0)
	require.NoError(t, err)
	require.Equal(t, []Chunk{{"type": "status", "message": "m"}}, got)
	got, err = Read(strings.NewReader(""), 0)
	require.NoError(t, err)
	require.Empty(t, got)
}

// Kortyx's reader (v0.14) splits on "\n\n" only and does not turn CRLF into LF: an event ended
// by CRLF is not split from the next one, whose text then follows its JSON.
func TestReadKeepsCRLF(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		code string
		got  []Chunk
	}{
		"CRLF event, then LF events": {"data: {\"type\":\"session\",\"sessionId\":\"s\"}\r\n\r\n" +
			"data: {\"type\":\"status\",\"message\":\"m\"}\n\ndata: {\"type\":\"done\"}\n\n", "MALFORMED_STREAM", nil},
		"LF event, then CRLF events": {"data: {\"type\":\"session\",\"sessionId\":\"s\"}\n\n" +
			"data: {\"type\":\"done\"}\r\n\r\ndata: [DONE]\r\n\r\n", "TRUNCATED_STREAM", []Chunk{{"type": "session", "sessionId": "s"}}},
		"only CRLF": {"data: {\"type\":\"done\"}\r\n\r\n", "TRUNCATED_STREAM", nil},
	} {
		t.Run(name, func(t *testing.T) {
			for _, size := range []int{1, 5, 4096} {
				got, err := Read(strings.NewReader(tc.body), size)
				var e *Error
				require.ErrorAs(t, err, &e, "read size %d", size)
				require.Equal(t, tc.code, e.Code, "read size %d", size)
				require.Equal(t, tc.got, got, "read size %d", size)
			}
		})
	}
}

func TestReadFailures(t *testing.T) {
	for name, tc := range map[string]struct{ body, code string }{
		"not JSON":              {"data: {\n\n", "MALFORMED_STREAM"},
		"no type":               {"data: {\"x\":1}\n\n", "MALFORMED_STREAM"},
		"array":                 {"data: [1]\n\n", "MALFORMED_STREAM"},
		"error without message": {"data: {\"type\":\"error\"}\n\n", "MALFORMED_STREAM"},
		"bad failure":           {"data: {\"type\":\"error\",\"message\":\"m\",\"failure\":{\"version\":1,\"code\":\"X\",\"category\":\"nope\",\"message\":\"m\",\"retryable\":false}}\n\n", "MALFORMED_STREAM"},
		"failure no retryable":  {"data: {\"type\":\"error\",\"message\":\"m\",\"failure\":{\"version\":1,\"code\":\"X\",\"category\":\"workflow\",\"message\":\"m\"}}\n\n", "MALFORMED_STREAM"},
		"control-flow code":     {"data: {\"type\":\"error\",\"message\":\"m\",\"failure\":{\"version\":1,\"code\":\"EXECUTION_CANCELLED\",\"category\":\"workflow\",\"message\":\"m\",\"retryable\":false}}\n\n", "MALFORMED_STREAM"},
		"ends without done":     {"data: {\"type\":\"session\",\"sessionId\":\"s\"}\n\n", "TRUNCATED_STREAM"},
		"incomplete event":      {"data: {\"type\":\"done\"}", "TRUNCATED_STREAM"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.body), 0)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.code, e.Code)
		})
	}
	got, err := Read(strings.NewReader("data: {\"type\":\"error\",\"message\":\"m\",\"failure\":{\"version\":1,\"code\":\"X\",\"category\":\"workflow\",\"message\":\"m\",\"retryable\":null,\"secret\":1,\"issues\":[{\"path\":[\"a\"],\"code\":\"c\",\"message\":\"dropped\"}]}}\n\n"+
		"data: {\"type\":\"done\"}\n\n"), 0)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"version": float64(1), "code": "X", "category": "workflow", "message": "m", "retryable": nil,
		"issues": []any{map[string]any{"code": "c", "path": []any{"a"}}}}, got[0]["failure"], "unknown keys are stripped")
}

func TestCheck(t *testing.T) {
	ok := []Chunk{
		{"type": "session", "sessionId": "s"},
		{"type": "checkpoint", "id": "cp", "sessionId": "s", "turnIndex": float64(0)},
		{"type": "structured-data-invalidated", "streamId": "x", "checkpointId": "cp"},
		{"type": "interrupt", "requestId": "r", "resumeToken": "t", "input": map[string]any{"kind": "text", "multiple": false, "extra": 1}},
		{"type": "interrupt", "requestId": "r", "resumeToken": "t", "input": map[string]any{"kind": "choice", "multiple": false, "question": "q",
			"options": []any{map[string]any{"id": "a", "label": "A"}}}},
		{"type": "structured-data", "streamId": "s", "dataType": "d", "kind": "append", "path": "p", "items": []any{}},
		{"type": "trace"},
	}
	for _, c := range ok {
		require.NoError(t, Check(c), "%v", c)
	}
	bad := []Chunk{
		{"type": "cancelled", "runId": "r"},
		{"type": "resume-rejected", "requestId": "q"},
		{"type": "text-invalidated", "opId": "o"},
		{"type": "structured-data-invalidated", "streamId": "x"},
		{"type": "checkpoint", "id": "cp", "sessionId": "s"},
		{"type": "interrupt", "requestId": "r", "resumeToken": "t", "input": map[string]any{"kind": "custom", "multiple": false}},
		{"type": "interrupt", "requestId": "r", "resumeToken": "t", "input": map[string]any{"kind": "text", "multiple": false, "options": nil}},
		{"type": "structured-data", "streamId": "s", "dataType": "d", "kind": "set", "path": ""},
		{"type": "error"},
	}
	for _, c := range bad {
		require.Error(t, Check(c), "%v", c)
	}
}
