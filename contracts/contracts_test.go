package contracts_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

func TestCodeOfThroughTemporalBoundary(t *testing.T) {
	orig := &contracts.Error{Code: contracts.CodeInvalidResponse, Message: "bad answer",
		Issues: []contracts.Issue{{Path: []any{"account"}, Code: "enum", Message: "unknown"}}}
	wrapped := fmt.Errorf("node: %w", contracts.ToTemporal(orig))
	require.Equal(t, contracts.CodeInvalidResponse, contracts.CodeOf(wrapped))
	f := contracts.FailureOf(wrapped)
	require.Equal(t, contracts.CodeInvalidResponse, f.Code)
	require.Equal(t, contracts.CategoryRequest, f.Category)
	require.Len(t, f.Issues, 1)
	require.Equal(t, []any{"account"}, f.Issues[0].Path)

	require.Equal(t, contracts.Code(""), contracts.CodeOf(nil))
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(errors.New("boom")))
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(temporal.NewCanceledError()))
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(temporal.NewApplicationError("x", "someGoType")))
	require.True(t, errors.Is(orig, &contracts.Error{Code: contracts.CodeInvalidResponse}))
	require.False(t, errors.Is(orig, &contracts.Error{Code: contracts.CodeInvalidResume}))
}

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
			a, err := contracts.NormalizeAnswer(tc.in, tc.resp, tc.schema)
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

func TestCheckResponse(t *testing.T) {
	p := &contracts.PendingRequest{RequestID: "human-1", Token: "tok"}
	require.NoError(t, contracts.CheckResponse(p, contracts.Response{Token: "tok", RequestID: "human-1"}))
	require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(contracts.CheckResponse(p, contracts.Response{Token: "x", RequestID: "human-1"})))
	require.Equal(t, contracts.CodeResumeMismatch, contracts.CodeOf(contracts.CheckResponse(p, contracts.Response{Token: "tok", RequestID: "human-2"})))
	require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(contracts.CheckResponse(nil, contracts.Response{Token: "tok", RequestID: "human-1"})))
}

func TestSchemaIssues(t *testing.T) {
	s, err := contracts.CompileSchema([]byte(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"integer"}}},"required":["name"]}`))
	require.NoError(t, err)
	issues := s.Validate(map[string]any{"items": []any{1, "x"}})
	require.Len(t, issues, 2)
	paths := []string{contracts.PathString(issues[0].Path), contracts.PathString(issues[1].Path)}
	require.ElementsMatch(t, []string{"(root)", "items[1]"}, paths)

	_, err = contracts.CompileSchema([]byte(`{"type": 12}`))
	require.Equal(t, contracts.CodeSchemaValidation, contracts.CodeOf(err))
	_, err = contracts.CompileSchema([]byte(`{"$ref": "http://example.com/x.json"}`))
	require.Error(t, err)
}

func TestChunkJSONKeepsPresentFalsyValues(t *testing.T) {
	zero := 0
	c := contracts.Chunk{Type: contracts.ChunkStructuredData, Kind: contracts.StructuredSet, Path: "a", Value: json.RawMessage(`false`)}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"structured-data","kind":"set","path":"a","value":false}`, string(b))
	cp := contracts.Chunk{Type: contracts.ChunkCheckpoint, ID: "cp-1", SessionID: "s", TurnIndex: &zero}
	b, _ = json.Marshal(cp)
	require.JSONEq(t, `{"type":"checkpoint","id":"cp-1","sessionId":"s","turnIndex":0}`, string(b))
}

func ExampleCodeOf() {
	err := fmt.Errorf("starting run: %w", contracts.Errorf(contracts.CodeUnknownWorkflow, `Workflow "x" not found.`))
	fmt.Println(contracts.CodeOf(err))
	fmt.Println(contracts.CodeOf(err).Category())
	// Output:
	// UNKNOWN_WORKFLOW
	// request
}

func ExampleSchema_Validate() {
	ticket := contracts.MustCompileSchema(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)
	for _, issue := range ticket.Validate(map[string]any{"title": 7}) {
		fmt.Println(issue.Code, contracts.PathString(issue.Path))
	}
	// Output:
	// type title
}
