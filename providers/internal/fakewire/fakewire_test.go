package fakewire

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
)

func TestScriptPlayer(t *testing.T) {
	call := func(name string) fake.Turn {
		return fake.Turn{ToolCalls: []providers.ToolCall{{Name: name, Arguments: json.RawMessage(`{}`)}}}
	}
	p := Script("fakex", []fake.Turn{call("a"), call("b")})
	var ids []string
	for range 2 {
		turn, err := p.Turn(providers.Request{})
		require.NoError(t, err)
		require.Len(t, turn.ToolCalls, 1)
		ids = append(ids, turn.ToolCalls[0].ID)
	}
	require.Len(t, ids, 2)
	require.NotEqual(t, ids[0], ids[1], "tool call ids are counted across the script")
	_, err := p.Turn(providers.Request{})
	require.EqualError(t, err, "fakex: script exhausted: request 3 received, 2 turns scripted")
	_, err = p.Turn(providers.Request{})
	require.EqualError(t, err, "fakex: script exhausted: request 4 received, 2 turns scripted")
	require.Equal(t, 1, p.NextResponse())
	require.Equal(t, 2, p.NextResponse())
}

func TestResponderPlayer(t *testing.T) {
	var seen []string
	p := Responder("fakex", func(req providers.Request) fake.Turn {
		seen = append(seen, req.Model)
		return fake.Text("hi " + req.Model)
	})
	for _, m := range []string{"m1", "m2"} {
		turn, err := p.Turn(providers.Request{Model: m})
		require.NoError(t, err)
		require.Equal(t, "hi "+m, turn.Text)
	}
	require.Equal(t, []string{"m1", "m2"}, seen)
}

func TestLog(t *testing.T) {
	var l Log[int]
	require.Nil(t, l.All())
	l.Add(1)
	l.Add(2)
	got := l.All()
	got[0] = 9
	require.Equal(t, []int{1, 2}, l.All(), "All returns a copy")
}

func TestTurnParts(t *testing.T) {
	d, text := Text(fake.Text("a b c"))
	require.Equal(t, []string{"a ", "b ", "c"}, d)
	require.Equal(t, "a b c", text)
	d, text = Text(fake.Turn{Deltas: []string{"x", "y"}})
	require.Equal(t, []string{"x", "y"}, d)
	require.Equal(t, "xy", text)
	d, text = Text(fake.Turn{})
	require.Nil(t, d)
	require.Equal(t, "", text)

	require.Equal(t, providers.FinishStop, Finish(fake.Text("x")))
	require.Equal(t, providers.FinishToolCalls, Finish(fake.Turn{ToolCalls: []providers.ToolCall{{Name: "t"}}}))
	require.Equal(t, providers.FinishLength, Finish(fake.Turn{FinishReason: providers.FinishLength}))

	require.Nil(t, TurnError(fake.Text("x")))
	ce := &contracts.Error{Code: contracts.CodeProviderRefusal, Message: "no"}
	require.Same(t, ce, TurnError(fake.Turn{Err: ce}))
	require.Equal(t, &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 500, Message: "boom"},
		TurnError(fake.Turn{Err: errors.New("boom")}))
}

func TestErrorStatus(t *testing.T) {
	require.Equal(t, 429, ErrorStatus(&contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 429}))
	require.Equal(t, 500, ErrorStatus(&contracts.Error{Code: contracts.CodeProviderHTTPError}))
	require.Equal(t, 500, ErrorStatus(&contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true}))
	require.Equal(t, 400, ErrorStatus(&contracts.Error{Code: contracts.CodeProviderConfiguration}))
}

func TestRetryAfterAndNumbers(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{{1500, "2"}, {int64(2000), "2"}, {0.5, "1"}, {json.Number("3000"), "3"}, {0, "0"}, {-1, ""}, {"2000", ""}, {nil, ""}} {
		h := http.Header{}
		SetRetryAfter(h, map[string]any{"retryAfterMs": tc.v})
		require.Equal(t, tc.want, h.Get("Retry-After"), "%#v", tc.v)
	}
	_, ok := Number(json.Number("x"))
	require.False(t, ok)
}

func TestSplitRunes(t *testing.T) {
	require.Equal(t, []string{""}, SplitRunes("", 3))
	require.Equal(t, []string{"ab", "cd", "e"}, SplitRunes("abcde", 3))
	require.Equal(t, []string{"é", "ü"}, SplitRunes("éü", 3))
}

func TestWriting(t *testing.T) {
	w := httptest.NewRecorder()
	WriteJSON(w, http.StatusTeapot, map[string]int{"a": 1})
	require.Equal(t, http.StatusTeapot, w.Code)
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	require.Equal(t, `{"a":1}`, w.Body.String())

	w = httptest.NewRecorder()
	WriteInvalidJSON(w)
	require.Equal(t, 200, w.Code)
	require.Equal(t, "this is not JSON {", w.Body.String())

	w = httptest.NewRecorder()
	s := SSE{W: w, Header: http.Header{"Request-Id": {"req_1"}}}
	require.False(t, s.Started())
	require.True(t, s.Write("data: 1\n\n"))
	require.True(t, s.Write("data: 2\n\n"))
	require.True(t, s.Started())
	require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
	require.Equal(t, "no-cache", w.Header().Get("Cache-Control"))
	require.Equal(t, "req_1", w.Header().Get("Request-Id"))
	require.Equal(t, "data: 1\n\ndata: 2\n\n", w.Body.String())

	require.Equal(t, json.RawMessage(`{"b":1}`), Field(json.RawMessage(`{"a":{"b":1}}`), "a"))
	require.Nil(t, Field(json.RawMessage(`[1]`), "a"))
	require.Nil(t, Field(json.RawMessage(`{}`), "a"))
}

func TestUsage(t *testing.T) {
	require.Nil(t, Usage(fake.Turn{NoUsage: true, Usage: providers.Usage{Input: 1}}, 3))
	require.Equal(t, &providers.Usage{Input: 10, Output: 3, Total: 13}, Usage(fake.Text("x"), 3))
	require.Equal(t, &providers.Usage{Input: 1, Output: 2}, Usage(fake.Turn{Usage: providers.Usage{Input: 1, Output: 2}}, 3))
}
