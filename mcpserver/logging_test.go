package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rawCall is the messages of one raw tools/call: the log messages ("<level> <logger>:
// <message>"), their data, and the response (the last message of its stream).
type rawCall struct {
	logs     []string
	data     []map[string]any
	response map[string]any
}

func (s *rawSession) call(t *testing.T, id int, tool, args string) rawCall {
	t.Helper()
	rep := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
	require.Equal(t, 200, rep.status, "%s", rep.body)
	msgs := rep.messages(t)
	var c rawCall
	for i, m := range msgs {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Level  string         `json:"level"`
				Logger string         `json:"logger"`
				Data   map[string]any `json:"data"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal([]byte(m), &msg))
		if i == len(msgs)-1 {
			require.NoError(t, json.Unmarshal([]byte(m), &c.response))
			require.EqualValues(t, id, c.response["id"], m)
			break
		}
		require.Equal(t, "notifications/message", msg.Method, m)
		message, _ := msg.Params.Data["message"].(string)
		c.logs = append(c.logs, msg.Params.Level+" "+msg.Params.Logger+": "+message)
		c.data = append(c.data, msg.Params.Data)
	}
	return c
}

// resultMeta is the _meta of a raw call's result.
func (c rawCall) resultMeta(t *testing.T) map[string]any {
	t.Helper()
	res, ok := c.response["result"].(map[string]any)
	require.True(t, ok, "%v", c.response)
	meta, _ := res["_meta"].(map[string]any)
	return meta
}

// The server advertises logging, and a call's events are log messages on the call's stream,
// before its result, at the client's level: the response's text at debug, a tool call starting
// at info, the call's tool error at error. Before the client sets a level, none is sent; an
// unknown level is refused.
func TestLogging(t *testing.T) {
	st := startStack(t)
	s := openRaw(t, "http://"+st.addr+"/mcp", "2025-11-25")
	setLevel := func(id int, level string) rawReply {
		return s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"logging/setLevel","params":{"level":%q}}`, id, level))
	}
	// A shipped order is not refunded: the model looks it up and says so.
	const refund = `{"message":"Please refund order A-1002."}`
	const answer = "Order A-1002 is shipped; I can refund it once it has been delivered."
	var deltas []string
	for _, d := range strings.SplitAfter(answer, " ") {
		deltas = append(deltas, "debug kortyx: "+d)
	}

	// No level set: no log message.
	c := s.call(t, 2, "support", refund)
	require.Empty(t, c.logs)

	// debug: everything, in order; the data names the session and the run.
	require.Equal(t, []string{`{"jsonrpc":"2.0","id":3,"result":{}}`}, setLevel(3, "debug").messages(t))
	c = s.call(t, 4, "support", refund)
	require.Equal(t, append([]string{"info kortyx: Calling lookup_order."}, deltas...), c.logs)
	meta := c.resultMeta(t)
	for _, d := range c.data {
		require.Equal(t, []string{"kortyx/runId", "kortyx/sessionId", "message"}, keys(d))
		require.Equal(t, meta["kortyx/sessionId"], d["kortyx/sessionId"])
		require.Equal(t, meta["kortyx/runId"], d["kortyx/runId"])
	}

	// info: the tool call.
	setLevel(5, "info")
	c = s.call(t, 6, "support", refund)
	require.Equal(t, []string{"info kortyx: Calling lookup_order."}, c.logs)

	// error: nothing from a call that succeeds; a failed run's tool error, with its failure.
	setLevel(7, "error")
	c = s.call(t, 8, "support", refund)
	require.Empty(t, c.logs)
	c = s.call(t, 9, "shout", `{"input":"fail"}`)
	require.Equal(t, []string{"error kortyx: Nothing to shout. (INVALID_INPUT)"}, c.logs)
	meta = c.resultMeta(t)
	require.Equal(t, []string{"kortyx/failure", "kortyx/runId", "kortyx/sessionId", "message"}, keys(c.data[0]))
	require.Equal(t, meta["kortyx/runId"], c.data[0]["kortyx/runId"])
	require.Equal(t, meta["kortyx/failure"], c.data[0]["kortyx/failure"])
	require.Equal(t, "INVALID_INPUT", c.data[0]["kortyx/failure"].(map[string]any)["code"])
	// So are arguments the input schema refuses (no session, no run).
	c = s.call(t, 10, "shout", `{}`)
	require.Equal(t, []string{"error kortyx: The arguments do not match the tool's input schema. (input: input is required) (INVALID_INPUT)"}, c.logs)
	require.Equal(t, []string{"kortyx/failure", "message"}, keys(c.data[0]))

	// An unknown level: invalid params, and the level stays.
	msg := `The log level \"loud\" is not one of debug, info, notice, warning, error, critical, alert, emergency.`
	rep := setLevel(11, "loud")
	require.Len(t, rep.messages(t), 1)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":11,"error":{"code":-32602,"message":"`+msg+`",
		"data":{"version":1,"code":"INVALID_REQUEST","category":"request","message":"`+msg+`","retryable":false}}}`, rep.messages(t)[0])
	c = s.call(t, 12, "support", refund)
	require.Empty(t, c.logs, "the level is still error")
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
