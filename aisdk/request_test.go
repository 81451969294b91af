package aisdk

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

func TestParseRequest(t *testing.T) {
	user := `{"id":"u1","role":"user","parts":[{"type":"text","text":" Hello "},{"type":"file","url":"x"},{"type":"text","text":"there"}]}`
	assistant := func(parts string) string {
		return `{"id":"a1","role":"assistant","parts":[` + parts + `]}`
	}
	body := func(msgs ...string) string {
		return `{"id":"chat-1","trigger":"submit-message","agent":"support","messages":[` + strings.Join(msgs, ",") + `],"extra":1}`
	}
	oldAsk := `{"type":"tool-kortyx_ask","toolCallId":"human-1.t1","state":"output-available","output":"old"}`
	for _, tc := range []struct {
		name string
		body string
		want turn
		code contracts.Code
		msg  string // the client's message, when checked
	}{
		{name: "prompt", body: body(user), want: turn{Text: "Hello\nthere"}},
		{name: "approved", body: body(user, assistant(`{"type":"step-start"},{"type":"tool-refund","toolCallId":"call_2","state":"approval-responded","approval":{"id":"human-2.t2","approved":true}}`)),
			want: turn{Answer: &contracts.Response{Token: "t2", RequestID: "human-2", Selected: []string{"approve"}}, ToolCallID: "call_2", Approved: true}},
		{name: "denied", body: body(user, assistant(`{"type":"dynamic-tool","toolName":"refund","toolCallId":"call_2","state":"approval-responded","approval":{"id":"human-2.t2","approved":false}}`)),
			want: turn{Answer: &contracts.Response{Token: "t2", RequestID: "human-2", Selected: []string{"deny"}}, ToolCallID: "call_2"}},
		{name: "answer in the last step", body: body(user, assistant(oldAsk+`,{"type":"step-start"},{"type":"tool-kortyx_ask","toolCallId":"human-3.t3","state":"output-available","output":{"plan":"pro"}}`)),
			want: turn{Answer: &contracts.Response{Token: "t3", RequestID: "human-3", Value: json.RawMessage(`{"plan":"pro"}`)}}},
		{name: "cancel", body: body(user, assistant(`{"type":"tool-kortyx_ask","toolCallId":"human-3.t3","state":"output-error","errorText":"no"}`)),
			want: turn{Answer: &contracts.Response{Token: "t3", RequestID: "human-3", Cancel: true}, ToolCallID: "human-3.t3", ErrorText: "no"}},
		{name: "old answers only", body: body(user, assistant(oldAsk+`,{"type":"step-start"},{"type":"text","text":"hi"}`)), code: contracts.CodeInvalidRequest},
		{name: "no text", body: body(`{"id":"u1","role":"user","parts":[{"type":"text","text":"  "}]}`), code: contracts.CodeInvalidRequest},
		{name: "no messages", body: `{"id":"chat-1","messages":[]}`, code: contracts.CodeInvalidRequest},
		{name: "no id", body: `{"messages":[` + user + `]}`, code: contracts.CodeInvalidRequest},
		{name: "bad id", body: `{"id":"a/b c","messages":[` + user + `]}`, code: contracts.CodeInvalidRequest},
		{name: "regenerate", body: `{"id":"chat-1","trigger":"regenerate-message","messages":[` + user + `]}`, code: contracts.CodeInvalidRequest},
		{name: "context", body: `{"id":"chat-1","context":[1],"messages":[` + user + `]}`, code: contracts.CodeInvalidRequest},
		{name: "system", body: `{"id":"chat-1","messages":[{"id":"s","role":"system","parts":[]}]}`, code: contracts.CodeInvalidRequest},
		{name: "not JSON", body: `{`, code: contracts.CodeInvalidRequest, msg: "Request body must be a JSON object {id, messages, ...}."},
		{name: "messages not a list", body: `{"id":"c","messages":{"a":1}}`, code: contracts.CodeInvalidRequest,
			msg: "Request body is invalid. (messages: messages must be a list)"},
		{name: "a part's text not a string", body: `{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":5}]}]}`,
			code: contracts.CodeInvalidRequest, msg: "Request body is invalid. (messages.parts.text: messages.parts.text must be a string)"},
		{name: "too big", body: body(`{"id":"u1","role":"user","parts":[{"type":"text","text":"` + strings.Repeat("x", 1000) + `"}]}`), code: contracts.CodeInvalidRequest,
			msg: "Request body is larger than 1000 bytes."},
		{name: "no messages msg", body: `{"id":"chat-1","messages":[]}`, code: contracts.CodeInvalidRequest, msg: "messages must not be empty."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, got, err := parseRequest(httptest.NewRequest("POST", "/api/ui/chat", strings.NewReader(tc.body)), 1000)
			if tc.code != "" {
				require.Error(t, err)
				require.Equal(t, tc.code, contracts.CodeOf(err))
				if tc.msg != "" {
					require.Equal(t, tc.msg, contracts.FailureOf(err).Message)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, "chat-1", req.ID)
			require.Equal(t, "support", req.Agent)
			require.Equal(t, tc.want, got)
		})
	}
}
