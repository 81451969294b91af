package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
)

func TestNormalizeAnswer(t *testing.T) {
	choice := contracts.InterruptInput{Kind: contracts.InterruptChoice, Options: []contracts.Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}}
	multi := choice
	multi.Kind, multi.Multiple = contracts.InterruptMultiChoice, true
	text := contracts.InterruptInput{Kind: contracts.InterruptText}
	custom := contracts.InterruptInput{Kind: contracts.InterruptCustom}
	accountSchema := contracts.MustCompileSchema(`{"type":"object","properties":{"account":{"enum":["A","B"]}},"required":["account"]}`)

	tests := []struct {
		name     string
		in       contracts.InterruptInput
		resp     contracts.Response
		schema   *contracts.Schema
		want     string // JSON of Answer.Value
		wantCode contracts.Code
	}{
		{name: "text", in: text, resp: contracts.Response{Text: "hello"}, want: `"hello"`},
		{name: "text via selected", in: text, resp: contracts.Response{Selected: []string{"hi"}}, want: `"hi"`},
		{name: "text via value", in: text, resp: contracts.Response{Value: json.RawMessage(`"v"`)}, want: `"v"`},
		{name: "text empty", in: text, resp: contracts.Response{Text: "  "}, wantCode: contracts.CodeInvalidResponse},
		{name: "choice", in: choice, resp: contracts.Response{Selected: []string{"b"}}, want: `"b"`},
		{name: "choice object value", in: choice, resp: contracts.Response{Value: json.RawMessage(`{"id":"a"}`)}, want: `"a"`},
		{name: "choice two", in: choice, resp: contracts.Response{Selected: []string{"a", "b"}}, wantCode: contracts.CodeInvalidResponse},
		{name: "choice unknown", in: choice, resp: contracts.Response{Selected: []string{"z"}}, wantCode: contracts.CodeInvalidResponse},
		{name: "choice none", in: choice, resp: contracts.Response{}, wantCode: contracts.CodeInvalidResponse},
		{name: "multi", in: multi, resp: contracts.Response{Selected: []string{"b", "a"}}, want: `["b","a"]`},
		{name: "multi objects", in: multi, resp: contracts.Response{Value: json.RawMessage(`[{"id":"a"},{"id":"b"}]`)}, want: `["a","b"]`},
		{name: "multi duplicate", in: multi, resp: contracts.Response{Selected: []string{"a", "a"}}, wantCode: contracts.CodeInvalidResponse},
		{name: "custom", in: custom, resp: contracts.Response{Value: json.RawMessage(`{"account":"B"}`)}, schema: accountSchema, want: `{"account":"B"}`},
		{name: "custom invalid", in: custom, resp: contracts.Response{Value: json.RawMessage(`{"account":"C"}`)}, schema: accountSchema, wantCode: contracts.CodeInvalidResponse},
		{name: "custom missing", in: custom, resp: contracts.Response{}, wantCode: contracts.CodeInvalidResponse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := protocol.NormalizeAnswer(tc.in, tc.resp, tc.schema)
			if tc.wantCode != "" {
				require.Equal(t, tc.wantCode, contracts.CodeOf(err), "err: %v", err)
				f := contracts.FailureOf(err)
				require.NotEmpty(t, f.Issues)
				require.Equal(t, 1, strings.Count(err.Error(), f.Issues[0].Message), "the message is not repeated: %q", err.Error())
				return
			}
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(a.Value))
		})
	}
}
