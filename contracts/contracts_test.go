package contracts_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

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
	require.Equal(t, "request", f.Category)
	require.Len(t, f.Issues, 1)
	require.Equal(t, []any{"account"}, f.Issues[0].Path)

	require.Equal(t, contracts.Code(""), contracts.CodeOf(nil))
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(errors.New("boom")))
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(temporal.NewCanceledError()))
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(temporal.NewApplicationError("x", "someGoType")))
	require.True(t, errors.Is(orig, &contracts.Error{Code: contracts.CodeInvalidResponse}))
	require.False(t, errors.Is(orig, &contracts.Error{Code: contracts.CodeInvalidResume}))
}

func TestCheckResponse(t *testing.T) {
	p := &contracts.PendingRequest{RequestID: "human-1", Token: "tok"}
	require.NoError(t, protocol.CheckResponse(p, contracts.Response{Token: "tok", RequestID: "human-1"}))
	require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(protocol.CheckResponse(p, contracts.Response{Token: "x", RequestID: "human-1"})))
	require.Equal(t, contracts.CodeResumeMismatch, contracts.CodeOf(protocol.CheckResponse(p, contracts.Response{Token: "tok", RequestID: "human-2"})))
	require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(protocol.CheckResponse(nil, contracts.Response{Token: "tok", RequestID: "human-1"})))
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
		fmt.Println(issue.Code, issue.Path)
	}
	// Output:
	// type [title]
}
