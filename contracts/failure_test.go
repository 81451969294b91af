package contracts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/temporal"
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// depthOf counts the levels of cause below f.
func depthOf(f contracts.Failure) int {
	n := 0
	for c := f.Cause; c != nil; c = c.Cause {
		n++
	}
	return n
}

func TestFailureDescriptorFields(t *testing.T) {
	inner := &contracts.Error{Code: contracts.CodeProviderHTTPError, Message: "Provider returned 429.",
		Retryable: true, Status: 429, Source: "openai", Operation: "model.generate",
		RetryAfter:   1500*time.Millisecond + time.Microsecond, // rounded up to whole milliseconds
		Usage:        &providers.Usage{Input: 3, Output: 1, Total: 4},
		FinishReason: &providers.FinishReason{Unified: providers.FinishError, Raw: "rate_limited"},
		Context:      map[string]any{"node": "draft", "attempt": 2},
		Err:          errors.New("dial tcp: secret internals")}
	outer := &contracts.Error{Code: contracts.CodeParallelFailed, Message: "A branch failed.",
		Results: []contracts.FailureResult{
			{Status: contracts.FailureResultFulfilled},
			{Status: contracts.FailureResultRejected, Failure: &contracts.Failure{Version: 1,
				Code: contracts.CodeDomainError, Category: "domain", Message: "No stock.",
				DomainCode: "OUT_OF_STOCK"}},
		},
		Err: fmt.Errorf("branch b: %w", inner)}

	require.JSONEq(t, `{
		"version": 1, "code": "PARALLEL_FAILED", "category": "workflow", "message": "A branch failed.",
		"retryable": false,
		"cause": {
			"version": 1, "code": "PROVIDER_HTTP_ERROR", "category": "provider",
			"message": "Provider returned 429.", "retryable": true, "source": "openai",
			"operation": "model.generate", "status": 429, "retryAfterMs": 1501,
			"usage": {"input": 3, "output": 1, "total": 4},
			"finishReason": {"unified": "error", "raw": "rate_limited"},
			"context": {"node": "draft", "attempt": 2}
		},
		"results": [
			{"status": "fulfilled"},
			{"status": "rejected", "failure": {"version": 1, "code": "DOMAIN_ERROR", "category": "domain",
				"message": "No stock.", "retryable": false, "domainCode": "OUT_OF_STOCK"}}
		]
	}`, marshal(t, outer.Failure()), "a non-Kortyx cause (the dial error) is never described")

	// Details["retryAfterMs"] (the provider adapters' convention) also fills retryAfterMs.
	f := (&contracts.Error{Code: contracts.CodeProviderHTTPError, Details: map[string]any{"retryAfterMs": 2000}}).Failure()
	require.EqualValues(t, 2000, f.RetryAfterMs)

	// Err turns the descriptor back into an equivalent chain.
	back := outer.Failure().Err()
	require.Equal(t, contracts.CodeParallelFailed, contracts.CodeOf(back))
	require.True(t, errors.Is(back, &contracts.Error{Code: contracts.CodeProviderHTTPError}))
	require.Equal(t, 1501*time.Millisecond, back.Err.(*contracts.Error).RetryAfter)
	require.JSONEq(t, marshal(t, outer.Failure()), marshal(t, back.Failure()))
}

func TestFailureCauseDepth(t *testing.T) {
	var err error = errors.New("root cause")
	for i := 7; i >= 1; i-- {
		err = &contracts.Error{Code: contracts.CodeWorkflowCallFailed, Message: fmt.Sprintf("level %d", i), Err: err}
	}
	f := contracts.FailureOf(err)
	require.Equal(t, "level 1", f.Message)
	require.Equal(t, contracts.MaxFailureDepth, depthOf(f), "root plus %d levels of cause", contracts.MaxFailureDepth)
	require.True(t, f.Truncated)
	last := f
	for last.Cause != nil {
		require.True(t, last.Truncated, "every level above the cut says so")
		last = *last.Cause
	}
	require.Equal(t, "level 5", last.Message)

	// A chain exactly MaxFailureDepth deep is kept whole.
	err = errors.New("x")
	for i := contracts.MaxFailureDepth; i >= 0; i-- {
		err = &contracts.Error{Code: contracts.CodeWorkflowCallFailed, Message: fmt.Sprint(i), Err: err}
	}
	f = contracts.FailureOf(err)
	require.Equal(t, contracts.MaxFailureDepth, depthOf(f))
	require.False(t, f.Truncated)

	// A cyclic chain ends.
	cyclic := &contracts.Error{Code: contracts.CodeExecutionFailed, Message: "loop"}
	cyclic.Err = cyclic
	f = cyclic.Failure()
	require.Equal(t, contracts.MaxFailureDepth, depthOf(f))
	require.True(t, f.Truncated)

	// Results nest within the same depth.
	leaf := &contracts.Failure{Version: 1, Code: contracts.CodeDomainError, Message: "leaf"}
	for i := 0; i < 6; i++ {
		leaf = &contracts.Failure{Version: 1, Code: contracts.CodeParallelFailed, Message: fmt.Sprint(i),
			Results: []contracts.FailureResult{{Status: contracts.FailureResultRejected, Failure: leaf}}}
	}
	f = leaf.Limit()
	require.True(t, f.Truncated)
	n := 0
	for g := &f; len(g.Results) > 0 && g.Results[0].Failure != nil; g = g.Results[0].Failure {
		n++
	}
	require.Equal(t, contracts.MaxFailureDepth, n)
}

func TestFailureLimits(t *testing.T) {
	long := strings.Repeat("é", 2000) // multi-byte: limits count characters, not bytes
	manyKeys := func(n int) map[string]any {
		m := map[string]any{}
		for i := 0; i < n; i++ {
			m[fmt.Sprintf("k%02d", i)] = i
		}
		return m
	}
	issues := func(n int) []contracts.Issue {
		out := make([]contracts.Issue, n)
		for i := range out {
			out[i] = contracts.Issue{Path: []any{"items", i}, Code: "type", Message: fmt.Sprintf("issue %d", i)}
		}
		return out
	}
	results := func(n int) []contracts.FailureResult {
		out := make([]contracts.FailureResult, n)
		for i := range out {
			out[i] = contracts.FailureResult{Status: contracts.FailureResultFulfilled}
		}
		return out
	}

	tests := []struct {
		name  string
		in    contracts.Failure
		check func(t *testing.T, f contracts.Failure)
	}{
		{"message 1024 characters", contracts.Failure{Message: long}, func(t *testing.T, f contracts.Failure) {
			require.Equal(t, contracts.MaxFailureMessage, utf8.RuneCountInString(f.Message))
			require.True(t, utf8.ValidString(f.Message))
			require.True(t, strings.HasSuffix(f.Message, "…"))
		}},
		{"message at the limit kept", contracts.Failure{Message: long[:2*contracts.MaxFailureMessage]}, func(t *testing.T, f contracts.Failure) {
			require.Equal(t, long[:2*contracts.MaxFailureMessage], f.Message)
			require.False(t, f.Truncated)
		}},
		{"other strings 256 characters", contracts.Failure{Source: long, Operation: long, DomainCode: long,
			FinishReason: &providers.FinishReason{Unified: "stop", Raw: long},
			Details:      map[string]any{"s": long, "nested": map[string]any{"s": long}, "list": []any{long}, "strs": []string{long}},
			Context:      map[string]any{"s": long},
			Issues:       []contracts.Issue{{Path: []any{long, 3}, Code: long, Message: long}}},
			func(t *testing.T, f contracts.Failure) {
				for _, s := range []string{f.Source, f.Operation, f.DomainCode, f.FinishReason.Raw,
					f.Details["s"].(string), f.Details["nested"].(map[string]any)["s"].(string),
					f.Details["list"].([]any)[0].(string), f.Details["strs"].([]any)[0].(string),
					f.Context["s"].(string), f.Issues[0].Path[0].(string), f.Issues[0].Code, f.Issues[0].Message} {
					require.Equal(t, contracts.MaxFailureString, utf8.RuneCountInString(s))
				}
				require.Equal(t, 3, f.Issues[0].Path[1])
				require.Equal(t, "stop", f.FinishReason.Unified)
			}},
		{"20 issues", contracts.Failure{Issues: issues(25)}, func(t *testing.T, f contracts.Failure) {
			require.Len(t, f.Issues, contracts.MaxFailureIssues)
			require.Equal(t, "issue 19", f.Issues[19].Message)
		}},
		{"64 results", contracts.Failure{Results: results(70)}, func(t *testing.T, f contracts.Failure) {
			require.Len(t, f.Results, contracts.MaxFailureResults)
		}},
		{"32 keys per map", contracts.Failure{Details: manyKeys(40), Context: manyKeys(33),
			Issues: issues(1)}, func(t *testing.T, f contracts.Failure) {
			require.Len(t, f.Details, contracts.MaxFailureKeys)
			require.Len(t, f.Context, contracts.MaxFailureKeys)
			require.Contains(t, f.Details, "k31", "the first keys in sorted order are kept")
			require.NotContains(t, f.Details, "k32")
		}},
		{"32 keys per nested map and items per list", contracts.Failure{Details: map[string]any{
			"m": manyKeys(40), "l": make([]any, 50)}}, func(t *testing.T, f contracts.Failure) {
			require.Len(t, f.Details["m"], contracts.MaxFailureKeys)
			require.Len(t, f.Details["l"], contracts.MaxFailureKeys)
		}},
		{"maps nest 4 levels", contracts.Failure{Details: map[string]any{"a": map[string]any{"b": map[string]any{
			"c": map[string]any{"d": "kept", "e": map[string]any{"f": 1}, "g": []any{1}}}}}},
			func(t *testing.T, f contracts.Failure) {
				level4 := f.Details["a"].(map[string]any)["b"].(map[string]any)["c"].(map[string]any)
				require.Equal(t, "kept", level4["d"])
				require.Nil(t, level4["e"])
				require.Nil(t, level4["g"])
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := marshal(t, tc.in)
			f := tc.in.Limit()
			tc.check(t, f)
			require.Equal(t, before, marshal(t, tc.in), "Limit does not modify its receiver")
			if tc.name != "message at the limit kept" {
				require.True(t, f.Truncated)
			}
			require.Equal(t, marshal(t, f), marshal(t, f.Limit()), "Limit is idempotent")
		})
	}

	// Within every limit, nothing changes, and typed values are kept as they are.
	small := contracts.Failure{Version: 1, Code: contracts.CodeInvalidInput, Message: "ok",
		Details: map[string]any{"allowed": []string{"a", "b"}, "n": 3}, Issues: issues(2)}
	got := small.Limit()
	require.Equal(t, small, got)
	require.IsType(t, []string{}, got.Details["allowed"])
}

func TestFailureTotalSizeCompaction(t *testing.T) {
	big := strings.Repeat("€", 300) // 3 bytes each: ~768 bytes per value after the 256 limit
	fill := func(n int) map[string]any {
		m := map[string]any{}
		for i := 0; i < n; i++ {
			m[fmt.Sprintf("k%02d", i)] = big
		}
		return m
	}
	fits := func(t *testing.T, f contracts.Failure) {
		t.Helper()
		require.LessOrEqual(t, len(marshal(t, f)), contracts.MaxFailureBytes)
		require.True(t, f.Truncated)
		require.True(t, strings.HasSuffix(f.Message, contracts.FailureTruncatedNote), f.Message)
	}

	t.Run("context dropped first", func(t *testing.T) {
		f := contracts.Failure{Version: 1, Code: contracts.CodeInvalidInput, Message: "Bad input.",
			Details: fill(32), Context: fill(32), Issues: []contracts.Issue{{Path: []any{"a"}, Code: "type", Message: "m"}}}
		require.Greater(t, len(marshal(t, f.Details))+len(marshal(t, f.Context)), contracts.MaxFailureBytes)
		g := f.Limit()
		fits(t, g)
		require.Equal(t, "Bad input. "+contracts.FailureTruncatedNote, g.Message)
		require.Nil(t, g.Context)
		require.Len(t, g.Details, 32)
		require.Len(t, g.Issues, 1)
	})

	t.Run("everything but the core", func(t *testing.T) {
		var rs []contracts.FailureResult
		for i := 0; i < contracts.MaxFailureResults; i++ {
			rs = append(rs, contracts.FailureResult{Status: contracts.FailureResultRejected, Failure: &contracts.Failure{
				Version: 1, Code: contracts.CodeDomainError, Message: strings.Repeat("€", 1024), Details: fill(4)}})
		}
		var is []contracts.Issue
		for i := 0; i < contracts.MaxFailureIssues; i++ {
			is = append(is, contracts.Issue{Path: []any{big}, Code: big, Message: big})
		}
		f := contracts.Failure{Version: 1, Code: contracts.CodeParallelFailed, Message: strings.Repeat("€", 1024),
			Details: fill(32), Issues: is, Results: rs,
			Cause: &contracts.Failure{Version: 1, Code: contracts.CodeDomainError, Message: "cause", Details: fill(32)}}
		g := f.Limit()
		fits(t, g)
		require.Equal(t, contracts.MaxFailureMessage, utf8.RuneCountInString(g.Message))
		require.Equal(t, contracts.CodeParallelFailed, g.Code)
		require.NotNil(t, g.Cause, "the cause is kept, reduced to its core")
		require.Nil(t, g.Cause.Details)
		require.Equal(t, "cause", g.Cause.Message)
		require.Len(t, g.Results, contracts.MaxFailureResults, "statuses are kept")
		for _, r := range g.Results {
			require.Equal(t, contracts.FailureResultRejected, r.Status)
			require.Nil(t, r.Failure)
		}
		require.Len(t, f.Results[0].Failure.Details, 4, "the receiver is not modified")
	})

	t.Run("unserializable details are dropped", func(t *testing.T) {
		f := contracts.Failure{Version: 1, Code: contracts.CodeExecutionFailed, Message: "x",
			Details: map[string]any{"fn": func() {}}}
		g := f.Limit()
		fits(t, g)
		require.Nil(t, g.Details)
	})

	t.Run("applied by Failure and FailureOf", func(t *testing.T) {
		e := &contracts.Error{Code: contracts.CodeInvalidInput, Message: "Bad input.", Details: fill(32), Context: fill(32)}
		fits(t, e.Failure())
		fits(t, contracts.FailureOf(fmt.Errorf("x: %w", e)))
		fits(t, contracts.FailureOf(contracts.ToTemporal(e)))
	})
}

func TestFailureOfUnknownErrorIsSafe(t *testing.T) {
	f := contracts.FailureOf(fmt.Errorf("query failed: %w", errors.New("password=hunter2")))
	require.Equal(t, contracts.Failure{Version: 1, Code: contracts.CodeExecutionFailed,
		Category: "internal", Message: "An unexpected error occurred."}, f)
	f = contracts.FailureOf(context.Canceled)
	require.Equal(t, contracts.CodeExecutionCancelled, f.Code)
	require.Equal(t, "Execution cancelled.", f.Message)
	require.Equal(t, contracts.Failure{}, contracts.FailureOf(nil))
}

func TestIsControlFlow(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"cancelled code", contracts.Errorf(contracts.CodeExecutionCancelled, "stop"), true},
		{"limit reached", fmt.Errorf("node: %w", contracts.Errorf(contracts.CodeExecutionLimitReached, "limit")), true},
		{"limit reached across Temporal", contracts.ToTemporal(contracts.Errorf(contracts.CodeExecutionLimitReached, "limit")), true},
		{"temporal canceled", temporal.NewCanceledError(), true},
		{"context canceled", fmt.Errorf("call: %w", context.Canceled), true},
		{"coded error caused by cancellation", &contracts.Error{Code: contracts.CodeProviderTransportError, Err: context.Canceled}, true},
		{"deadline is a failure", context.DeadlineExceeded, false},
		{"provider error", contracts.Errorf(contracts.CodeProviderHTTPError, "500"), false},
		{"unknown error", errors.New("boom"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, contracts.IsControlFlow(tc.err))
		})
	}
}

func TestDomainError(t *testing.T) {
	e := contracts.DomainError("OUT_OF_STOCK", "This item is out of stock.", map[string]any{"sku": "A-1"})
	require.Equal(t, contracts.CodeDomainError, contracts.CodeOf(e))
	require.Equal(t, "This item is out of stock.", e.Error())
	require.JSONEq(t, `{"version":1,"code":"DOMAIN_ERROR","category":"domain","message":"This item is out of stock.",
		"retryable":false,"domainCode":"OUT_OF_STOCK","details":{"sku":"A-1"}}`, marshal(t, e.Failure()))
	require.Equal(t, "OUT_OF_STOCK", contracts.FailureOf(contracts.ToTemporal(e)).DomainCode)
}

func TestSpecCodesExist(t *testing.T) {
	// Every code of spec F4.1, with the category it belongs to.
	want := map[contracts.Code]string{
		"PROVIDER_HTTP_ERROR": "provider", "PROVIDER_TRANSPORT_ERROR": "provider",
		"PROVIDER_REQUEST_FAILED": "provider", "PROVIDER_INVALID_RESPONSE": "provider",
		"PROVIDER_REFUSAL": "provider", "PROVIDER_CONFIGURATION": "configuration",
		"MODEL_OUTPUT_SCHEMA": "validation", "INVALID_MODEL_JSON": "validation", "OUTPUT_TRUNCATED": "validation",
		"SCHEMA_VALIDATION": "validation", "INVALID_OUTPUT": "validation",
		"WORKFLOW_CONTRACT_ERROR": "workflow", "WORKFLOW_CALL_FAILED": "workflow", "PARALLEL_FAILED": "workflow",
		"PERSISTENCE_ERROR": "persistence", "CHAT_LIFECYCLE_HOOK_FAILED": "persistence",
		"RESUME_FAILED": "request", "INVALID_REQUEST": "request", "INVALID_INPUT": "request",
		"INVALID_RESUME": "request", "INVALID_RESPONSE": "request", "RESUME_MISMATCH": "request",
		"INVALID_SESSION": "request", "MISSING_CONTRACT": "request", "CONTRACT_MISMATCH": "request",
		"NOT_FOUND": "request", "UNKNOWN_WORKFLOW": "request",
		"MALFORMED_STREAM": "transport", "TRUNCATED_STREAM": "transport",
		"EXECUTION_CANCELLED": "workflow", "EXECUTION_LIMIT_REACHED": "workflow", "EXECUTION_FAILED": "internal",
		"DOMAIN_ERROR":                   "domain",
		"REASON_OUTPUT_BUDGET_EXHAUSTED": "validation", "REASON_OUTPUT_CONTRACT_CORRECTION_EXHAUSTED": "validation",
		"REASON_TERMINAL_OUTPUT_MISSING": "validation", "REASON_OUTPUT_SCHEMA_CORRECTION_EXHAUSTED": "validation",
	}
	consts := []contracts.Code{contracts.CodeProviderHTTPError, contracts.CodeProviderTransportError,
		contracts.CodeProviderRequestFailed, contracts.CodeProviderInvalidResponse, contracts.CodeProviderRefusal,
		contracts.CodeProviderConfiguration, contracts.CodeModelOutputSchema, contracts.CodeInvalidModelJSON,
		contracts.CodeOutputTruncated, contracts.CodeSchemaValidation, contracts.CodeInvalidOutput,
		contracts.CodeWorkflowContractError, contracts.CodeWorkflowCallFailed, contracts.CodeParallelFailed,
		contracts.CodePersistenceError, contracts.CodeChatLifecycleHookFailed, contracts.CodeResumeFailed,
		contracts.CodeInvalidRequest, contracts.CodeInvalidInput, contracts.CodeInvalidResume,
		contracts.CodeInvalidResponse, contracts.CodeResumeMismatch, contracts.CodeInvalidSession,
		contracts.CodeMissingContract, contracts.CodeContractMismatch, contracts.CodeNotFound,
		contracts.CodeUnknownWorkflow, contracts.CodeMalformedStream, contracts.CodeTruncatedStream,
		contracts.CodeExecutionCancelled, contracts.CodeExecutionLimitReached, contracts.CodeExecutionFailed,
		contracts.CodeDomainError, contracts.CodeReasonOutputBudgetExhausted,
		contracts.CodeReasonOutputContractCorrectionExhausted, contracts.CodeReasonTerminalOutputMissing,
		contracts.CodeReasonOutputSchemaCorrectionExhausted}
	require.Len(t, consts, len(want))
	for _, c := range consts {
		cat, ok := want[c]
		require.True(t, ok, "%s is not a spec code", c)
		require.Equal(t, cat, c.Category(), "category of %s", c)
	}
}

// applicationFailure is the Temporal failure of what an activity or child workflow returned.
func applicationFailure(err error) *failurepb.Failure {
	return temporal.GetDefaultFailureConverter().ErrorToFailure(contracts.ToTemporal(err))
}

// activityFailure wraps cause as the server reports a failed activity.
func activityFailure(cause *failurepb.Failure) *failurepb.Failure {
	return &failurepb.Failure{Message: "activity error", Cause: cause,
		FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
			ActivityType: &commonpb.ActivityType{Name: "Model"}, ActivityId: "5", ScheduledEventId: 5}}}
}

// childFailure wraps cause as the server reports a failed child workflow.
func childFailure(cause *failurepb.Failure) *failurepb.Failure {
	return &failurepb.Failure{Message: "child workflow execution error", Cause: cause,
		FailureInfo: &failurepb.Failure_ChildWorkflowExecutionFailureInfo{
			ChildWorkflowExecutionFailureInfo: &failurepb.ChildWorkflowExecutionFailureInfo{
				Namespace: "default", WorkflowType: &commonpb.WorkflowType{Name: "child"},
				WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: "child-1", RunId: "r"}}}}
}

func TestCodeOfAcrossActivityAndChildWorkflow(t *testing.T) {
	fc := temporal.GetDefaultFailureConverter()
	orig := &contracts.Error{Code: contracts.CodeInvalidOutput, Message: "The answer does not match the schema.",
		Issues:  []contracts.Issue{{Path: []any{"items", 1}, Code: "type", Message: "want integer"}},
		Details: map[string]any{"schemaId": "ticket", "attempts": 2}}

	// An activity failure inside a child workflow failure, as the parent workflow sees it.
	err := fc.FailureToError(childFailure(activityFailure(applicationFailure(orig))))
	var childErr *temporal.ChildWorkflowExecutionError
	var actErr *temporal.ActivityError
	require.ErrorAs(t, err, &childErr)
	require.ErrorAs(t, err, &actErr)
	err = fmt.Errorf("node review: %w", err)

	require.Equal(t, contracts.CodeInvalidOutput, contracts.CodeOf(err))
	f := contracts.FailureOf(err)
	require.Equal(t, contracts.CodeInvalidOutput, f.Code)
	require.Equal(t, orig.Issues, f.Issues, "int path segments come back as ints")
	require.Equal(t, "items[1]", contracts.PathString(f.Issues[0].Path))
	require.JSONEq(t, marshal(t, orig.Details), marshal(t, f.Details))
	require.False(t, contracts.IsControlFlow(err))

	// A Kortyx error wrapping the child's failure keeps its own code, and describes the child's
	// failure as its cause; so does what it becomes at the next boundary.
	call := &contracts.Error{Code: contracts.CodeWorkflowCallFailed, Message: `Workflow "child" failed.`, Err: err}
	for _, e := range []error{call, contracts.ToTemporal(call), fc.FailureToError(applicationFailure(call))} {
		require.Equal(t, contracts.CodeWorkflowCallFailed, contracts.CodeOf(e))
		f = contracts.FailureOf(e)
		require.Equal(t, contracts.CodeWorkflowCallFailed, f.Code)
		require.NotNil(t, f.Cause)
		require.Equal(t, contracts.CodeInvalidOutput, f.Cause.Code)
		require.Equal(t, orig.Issues, f.Cause.Issues)
	}

	// The outermost code wins even when the cause is a Kortyx error too.
	nested := &contracts.Error{Code: contracts.CodeResumeFailed, Message: "outer",
		Err: contracts.Errorf(contracts.CodePersistenceError, "inner")}
	require.Equal(t, contracts.CodeResumeFailed, contracts.CodeOf(contracts.ToTemporal(nested)))
	require.Equal(t, contracts.CodeResumeFailed, contracts.FailureOf(contracts.ToTemporal(nested)).Code)
	require.Equal(t, contracts.CodePersistenceError, contracts.FailureOf(contracts.ToTemporal(nested)).Cause.Code)

	// Cancellation of a child is control flow.
	cancelled := fc.FailureToError(childFailure(fc.ErrorToFailure(temporal.NewCanceledError())))
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(cancelled))
	require.True(t, contracts.IsControlFlow(cancelled))
}

func TestFailureSurvivesFailureConverter(t *testing.T) {
	fc := temporal.GetDefaultFailureConverter()
	orig := &contracts.Error{Code: contracts.CodeProviderHTTPError, Message: "Provider returned 429.",
		Retryable: true, Status: 429, RetryAfter: 2 * time.Second, Source: "openai", Operation: "model.generate",
		Details: map[string]any{"providerCode": "rate_limit_exceeded", "limits": map[string]any{"rpm": 60}},
		Issues:  []contracts.Issue{{Path: []any{"messages", 0, "content"}, Code: "maxLength", Message: "too long"}},
		Usage:   &providers.Usage{Input: 10, Total: 10},
		Err:     contracts.DomainError("QUOTA", "Quota reached.", nil)}
	want := orig.Failure()

	back := fc.FailureToError(fc.ErrorToFailure(contracts.ToTemporal(orig)))
	var ae *temporal.ApplicationError
	require.ErrorAs(t, back, &ae)
	require.Equal(t, string(contracts.CodeProviderHTTPError), ae.Type())
	require.False(t, ae.NonRetryable())
	require.Equal(t, 2*time.Second, ae.NextRetryDelay(), "RetryAfter becomes the next retry delay")

	got := contracts.FailureOf(back)
	require.Equal(t, want.Code, got.Code)
	require.Equal(t, want.Issues, got.Issues)
	require.JSONEq(t, marshal(t, want.Details), marshal(t, got.Details))
	require.JSONEq(t, marshal(t, want), marshal(t, got), "the whole descriptor, cause included")
	require.Equal(t, "QUOTA", got.Cause.DomainCode)
}

func TestIssueUnmarshalJSON(t *testing.T) {
	var is contracts.Issue
	require.NoError(t, json.Unmarshal([]byte(`{"path":["a",2,"1",1.5],"code":"c","message":"m"}`), &is))
	require.Equal(t, []any{"a", 2, "1", 1.5}, is.Path)
	require.NoError(t, json.Unmarshal([]byte(`{"path":[],"code":"c","message":"m"}`), &is))
	require.Equal(t, []any{}, is.Path)
}

func ExampleDomainError() {
	err := contracts.DomainError("OUT_OF_STOCK", "This item is out of stock.", map[string]any{"sku": "A-1"})
	b, _ := json.Marshal(contracts.FailureOf(fmt.Errorf("checkout: %w", err)))
	fmt.Println(string(b))
	// Output:
	// {"version":1,"code":"DOMAIN_ERROR","category":"domain","message":"This item is out of stock.","retryable":false,"domainCode":"OUT_OF_STOCK","details":{"sku":"A-1"}}
}
