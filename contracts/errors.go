package contracts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// Code is a stable, machine-readable failure code. Wire values are SCREAMING_SNAKE and never change.
type Code string

// Failure codes (spec F4.1). A Code crosses activity, workflow and process boundaries as the
// Type of a Temporal ApplicationError; classify any error with [CodeOf].
const (
	CodeProviderHTTPError                       Code = "PROVIDER_HTTP_ERROR"
	CodeProviderTransportError                  Code = "PROVIDER_TRANSPORT_ERROR"
	CodeProviderRequestFailed                   Code = "PROVIDER_REQUEST_FAILED"
	CodeProviderInvalidResponse                 Code = "PROVIDER_INVALID_RESPONSE"
	CodeProviderRefusal                         Code = "PROVIDER_REFUSAL"
	CodeProviderConfiguration                   Code = "PROVIDER_CONFIGURATION"
	CodeModelOutputSchema                       Code = "MODEL_OUTPUT_SCHEMA"
	CodeInvalidModelJSON                        Code = "INVALID_MODEL_JSON"
	CodeOutputTruncated                         Code = "OUTPUT_TRUNCATED"
	CodeSchemaValidation                        Code = "SCHEMA_VALIDATION"
	CodeInvalidOutput                           Code = "INVALID_OUTPUT"
	CodeWorkflowContractError                   Code = "WORKFLOW_CONTRACT_ERROR"
	CodeWorkflowCallFailed                      Code = "WORKFLOW_CALL_FAILED"
	CodeParallelFailed                          Code = "PARALLEL_FAILED"
	CodePersistenceError                        Code = "PERSISTENCE_ERROR"
	CodeChatLifecycleHookFailed                 Code = "CHAT_LIFECYCLE_HOOK_FAILED"
	CodeResumeFailed                            Code = "RESUME_FAILED"
	CodeInvalidRequest                          Code = "INVALID_REQUEST"
	CodeInvalidInput                            Code = "INVALID_INPUT"
	CodeInvalidResume                           Code = "INVALID_RESUME"
	CodeInvalidResponse                         Code = "INVALID_RESPONSE"
	CodeResumeMismatch                          Code = "RESUME_MISMATCH"
	CodeInvalidSession                          Code = "INVALID_SESSION"
	CodeMissingContract                         Code = "MISSING_CONTRACT"
	CodeContractMismatch                        Code = "CONTRACT_MISMATCH"
	CodeNotFound                                Code = "NOT_FOUND"
	CodeUnknownWorkflow                         Code = "UNKNOWN_WORKFLOW"
	CodeMalformedStream                         Code = "MALFORMED_STREAM"
	CodeTruncatedStream                         Code = "TRUNCATED_STREAM"
	CodeExecutionCancelled                      Code = "EXECUTION_CANCELLED"
	CodeExecutionLimitReached                   Code = "EXECUTION_LIMIT_REACHED"
	CodeExecutionFailed                         Code = "EXECUTION_FAILED"
	CodeDomainError                             Code = "DOMAIN_ERROR"
	CodeReasonOutputBudgetExhausted             Code = "REASON_OUTPUT_BUDGET_EXHAUSTED"
	CodeReasonOutputContractCorrectionExhausted Code = "REASON_OUTPUT_CONTRACT_CORRECTION_EXHAUSTED"
	CodeReasonTerminalOutputMissing             Code = "REASON_TERMINAL_OUTPUT_MISSING"
	CodeReasonOutputSchemaCorrectionExhausted   Code = "REASON_OUTPUT_SCHEMA_CORRECTION_EXHAUSTED"

	// Codes of this port (not in Kortyx).

	// CodeInvalidDefinition: a workflow definition failed validation; Issues hold every problem.
	CodeInvalidDefinition Code = "INVALID_DEFINITION"
	// CodeInvalidInterrupt: node code asked an interrupt that cannot be shown (no options, bad schema…).
	CodeInvalidInterrupt Code = "INVALID_INTERRUPT"
	// CodeHookOutsideNode: a hook was called with a context that is not a node's context.
	CodeHookOutsideNode Code = "HOOK_OUTSIDE_NODE"
	// CodePayloadTooLarge: a value would exceed Temporal's payload limit.
	CodePayloadTooLarge Code = "PAYLOAD_TOO_LARGE"
	// CodeReasonMaxSteps: the tool loop used all its model passes (MaxSteps) without a final
	// answer.
	CodeReasonMaxSteps Code = "REASON_MAX_STEPS_REACHED"
	// CodeUnknownTool: a model asked for a tool that was not offered, or a tool is not
	// registered on the worker.
	CodeUnknownTool Code = "UNKNOWN_TOOL"
	// CodeInvalidToolCall: a model returned an empty or duplicate tool call id.
	CodeInvalidToolCall Code = "INVALID_TOOL_CALL"
	// CodeReasonMaxEmissions: the model emitted more outputs than Outputs.MaxEmissions allows.
	CodeReasonMaxEmissions Code = "REASON_MAX_EMISSIONS_REACHED"
	// CodeReasonMaxRequests: the model asked more interrupt contracts than MaxRequests allows.
	CodeReasonMaxRequests Code = "REASON_MAX_REQUESTS_REACHED"
	// CodeReasonInterruptRequired: interrupt contracts are required but the model finished
	// without asking.
	CodeReasonInterruptRequired Code = "REASON_INTERRUPT_REQUIRED"
	// CodeTemporalUnavailable: the Temporal service did not answer (HTTP 503); retry later.
	CodeTemporalUnavailable Code = "TEMPORAL_UNAVAILABLE"
	// CodeActivityTimeout: an activity (a model pass, a tool call…) did not complete within its
	// timeouts and retries, e.g. its workers kept dying; the failure's context names the
	// activity and the timeout.
	CodeActivityTimeout Code = "ACTIVITY_TIMEOUT"
	// CodeStreamUnavailable: the stream broker's store (Redis) did not answer; retryable, the
	// chunks of a failed publish stay in the run's outbox and are published again in order.
	CodeStreamUnavailable Code = "STREAM_UNAVAILABLE"
	// CodeStreamGone: a reader asked to continue a run's stream after an offset the broker can
	// no longer serve exactly (the stream was lost, expired, or trimmed past the reader); not
	// retryable: read the run's result or start over from offset 0.
	CodeStreamGone Code = "STREAM_GONE"
	// CodePayloadMissing: a payload reference in history names a hash the payload store does
	// not have (package codec); the message names the hash.
	CodePayloadMissing Code = "PAYLOAD_MISSING"
	// CodePayloadCodec: a payload cannot be encoded or decoded (unknown key id, failed
	// authentication, corrupt data, no payload store configured for a reference).
	CodePayloadCodec Code = "PAYLOAD_CODEC_FAILED"
	// CodeBudgetExhausted: a model pass could not be granted under the run's token or money
	// budget ([Limits].MaxTokens, MaxCost) and the run fails rather than asks
	// (OnBudgetExhausted "fail", or the budget question answered "stop").
	CodeBudgetExhausted Code = "BUDGET_EXHAUSTED"
	// CodePriceMissing: a run with a money budget called a model the worker's price table has
	// no price for; the message names the model.
	CodePriceMissing Code = "PRICE_MISSING"
)

// declared is every code of this module. Only these are taken as Kortyx codes when they come
// back as the type of a Temporal ApplicationError: any other type (a tool's own error, a Go
// type name, another library's code) is not, so its text is never shown to clients as a
// Kortyx failure. A test checks that every Code constant of the package is listed.
var declared = map[Code]bool{
	CodeProviderHTTPError: true, CodeProviderTransportError: true, CodeProviderRequestFailed: true,
	CodeProviderInvalidResponse: true, CodeProviderRefusal: true, CodeProviderConfiguration: true,
	CodeModelOutputSchema: true, CodeInvalidModelJSON: true, CodeOutputTruncated: true,
	CodeSchemaValidation: true, CodeInvalidOutput: true, CodeWorkflowContractError: true,
	CodeWorkflowCallFailed: true, CodeParallelFailed: true, CodePersistenceError: true,
	CodeChatLifecycleHookFailed: true, CodeResumeFailed: true, CodeInvalidRequest: true,
	CodeInvalidInput: true, CodeInvalidResume: true, CodeInvalidResponse: true,
	CodeResumeMismatch: true, CodeInvalidSession: true, CodeMissingContract: true,
	CodeContractMismatch: true, CodeNotFound: true, CodeUnknownWorkflow: true,
	CodeMalformedStream: true, CodeTruncatedStream: true, CodeExecutionCancelled: true,
	CodeExecutionLimitReached: true, CodeExecutionFailed: true, CodeDomainError: true,
	CodeReasonOutputBudgetExhausted: true, CodeReasonOutputContractCorrectionExhausted: true,
	CodeReasonTerminalOutputMissing: true, CodeReasonOutputSchemaCorrectionExhausted: true,
	CodeInvalidDefinition: true, CodeInvalidInterrupt: true, CodeHookOutsideNode: true,
	CodePayloadTooLarge: true, CodeReasonMaxSteps: true, CodeUnknownTool: true,
	CodeInvalidToolCall: true, CodeReasonMaxEmissions: true, CodeReasonMaxRequests: true,
	CodeReasonInterruptRequired: true, CodeActivityTimeout: true, CodeTemporalUnavailable: true,
	CodeSessionBusy: true, CodeUnauthorized: true, CodeForbidden: true, CodeClientTurnConflict: true,
	CodeStreamUnavailable: true, CodeStreamGone: true, CodePayloadMissing: true, CodePayloadCodec: true,
	CodeBudgetExhausted: true, CodePriceMissing: true,
}

// Declared reports whether c is one of the codes of this module (the constants of this
// package). Only declared codes are read back from Temporal ApplicationError types by
// [CodeOf] and [FailureOf].
func (c Code) Declared() bool { return declared[c] }

// The failure categories: the values of [Code.Category] and [Failure].Category.
const (
	categoryConfiguration = "configuration"
	categoryProvider      = "provider"
	categoryValidation    = "validation"
	categoryDomain        = "domain"
	categoryWorkflow      = "workflow"
	categoryPersistence   = "persistence"
	categoryRequest       = "request"
	categoryTransport     = "transport"
	categoryInternal      = "internal"
)

// Category returns the category a code belongs to: "configuration", "provider", "validation",
// "domain", "workflow", "persistence", "request", "transport" or "internal". Categories group
// codes for HTTP mapping and dashboards (spec F4.1).
func (c Code) Category() string {
	switch c {
	case CodeProviderConfiguration, CodeInvalidDefinition, CodeUnknownTool, CodePriceMissing:
		return categoryConfiguration
	case CodeProviderHTTPError, CodeProviderTransportError, CodeProviderRequestFailed,
		CodeProviderInvalidResponse, CodeProviderRefusal:
		return categoryProvider
	case CodeModelOutputSchema, CodeInvalidModelJSON, CodeOutputTruncated, CodeSchemaValidation,
		CodeInvalidOutput, CodeReasonOutputBudgetExhausted, CodeReasonOutputContractCorrectionExhausted,
		CodeReasonTerminalOutputMissing, CodeReasonOutputSchemaCorrectionExhausted, CodeInvalidInterrupt,
		CodePayloadTooLarge, CodeReasonMaxSteps, CodeInvalidToolCall, CodeReasonMaxEmissions, CodeReasonMaxRequests,
		CodeReasonInterruptRequired:
		return categoryValidation
	case CodeWorkflowContractError, CodeWorkflowCallFailed, CodeParallelFailed, CodeHookOutsideNode,
		CodeExecutionCancelled, CodeExecutionLimitReached, CodeBudgetExhausted:
		return categoryWorkflow
	case CodePersistenceError, CodeChatLifecycleHookFailed, CodeTemporalUnavailable, CodeStreamUnavailable,
		CodePayloadMissing:
		return categoryPersistence
	case CodeResumeFailed, CodeInvalidRequest, CodeInvalidInput, CodeInvalidResume, CodeInvalidResponse, CodeSessionBusy,
		CodeUnauthorized, CodeForbidden, CodeClientTurnConflict,
		CodeResumeMismatch, CodeInvalidSession, CodeMissingContract, CodeContractMismatch, CodeNotFound,
		CodeUnknownWorkflow, CodeStreamGone:
		return categoryRequest
	case CodeMalformedStream, CodeTruncatedStream:
		return categoryTransport
	case CodeDomainError:
		return categoryDomain
	}
	return categoryInternal
}

// Issue is one problem found while validating a value: where (Path, with string keys and int
// indexes), which rule (Code, e.g. a JSON Schema keyword) and a sentence saying what to fix.
type Issue struct {
	Path    []any  `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// String renders the issue as "path: message".
func (i Issue) String() string {
	if len(i.Path) == 0 {
		return i.Message
	}
	return pathString(i.Path) + ": " + i.Message
}

// pathString renders a path as "a.b[2].c"; the empty path is "(root)".
func pathString(path []any) string {
	if len(path) == 0 {
		return "(root)"
	}
	var b strings.Builder
	for i, p := range path {
		switch v := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// UnmarshalJSON decodes an issue, turning whole-number path segments back into ints (JSON
// decodes them as float64), so that a path read back from a Temporal failure or an HTTP body
// renders as "items[1]" again.
func (i *Issue) UnmarshalJSON(b []byte) error {
	type plain Issue
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	for k, seg := range p.Path {
		if n, ok := seg.(float64); ok && n == math.Trunc(n) && math.Abs(n) <= 1<<53 {
			p.Path[k] = int(n)
		}
	}
	*i = Issue(p)
	return nil
}

// Error is the one error type of this module. Match it with [CodeOf] or errors.Is against an
// *Error carrying only a Code. [FailureOf] turns it into the serializable [Failure]
// descriptor; every field but Code, Message and Err is optional.
type Error struct {
	Code      Code
	Message   string         // safe to show to end users; says what to fix
	Retryable bool           // whether retrying the same call may succeed
	Status    int            // HTTP status of an upstream failure, if any
	Details   map[string]any // small structured facts (limits, counts, names)
	Issues    []Issue        // per-field problems of a validation failure
	Err       error          // cause, if any; a Kortyx cause becomes the descriptor's cause

	DomainCode   string          // application code of a DOMAIN_ERROR (see [DomainError])
	Source       string          // what failed: a provider, tool, workflow or store name
	Operation    string          // what it was doing, e.g. "model.generate", "checkpoint.save"
	RetryAfter   time.Duration   // how long to wait before a retry, when the upstream said so
	Usage        *Usage          // tokens used before a model pass failed
	FinishReason *FinishReason   // why the failed model pass ended
	Context      map[string]any  // small facts about where it happened (node, run, attempt)
	Results      []FailureResult // per-branch outcomes of a PARALLEL_FAILED
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// DomainError builds an application ("domain") failure: code DOMAIN_ERROR, category domain, the
// application's own domainCode in the descriptor's domainCode, a message safe to show to end
// users and optional details. Domain errors are not retryable.
func DomainError(domainCode, safeMessage string, details map[string]any) *Error {
	return &Error{Code: CodeDomainError, DomainCode: domainCode, Message: safeMessage, Details: details}
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = string(e.Code)
	}
	parts := make([]string, 0, len(e.Issues))
	for _, is := range e.Issues {
		if s := is.String(); s != msg && is.Message != msg {
			parts = append(parts, s)
		}
	}
	if len(parts) > 0 {
		msg += " (" + strings.Join(parts, "; ") + ")"
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code (a target without Code matches none).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code != "" && t.Code == e.Code
}

// failure returns the serializable descriptor of this error ([FailureOf]), within the limits
// of a descriptor (failure.go). If Err is, or wraps, another *Error (or a coded Temporal
// ApplicationError), that one's descriptor becomes the cause, and so on down to
// maxFailureDepth levels.
func (e *Error) failure() Failure {
	return e.descriptor(0).limit()
}

// descriptor builds the unlimited descriptor of e at the given nesting depth; the cause chain
// stops one level past maxFailureDepth (which Limit then cuts), so a cyclic chain ends too.
func (e *Error) descriptor(depth int) Failure {
	f := Failure{
		Version:      1,
		Code:         e.Code,
		Category:     e.Code.Category(),
		Message:      e.Error(),
		Retryable:    e.Retryable,
		Source:       e.Source,
		Operation:    e.Operation,
		Status:       e.Status,
		RetryAfterMs: e.retryAfterMs(),
		DomainCode:   e.DomainCode,
		Details:      e.Details,
		Issues:       e.Issues,
		Usage:        e.Usage,
		FinishReason: e.FinishReason,
		Context:      e.Context,
		Results:      e.Results,
	}
	if depth > maxFailureDepth {
		f.Truncated = f.Truncated || kortyxIn(e.Err) != nil
		return f
	}
	switch c := kortyxIn(e.Err).(type) {
	case *Error:
		cause := c.descriptor(depth + 1)
		f.Cause = &cause
	case *temporal.ApplicationError:
		cause := withActivity(appFailure(c), e.Err)
		f.Cause = &cause
	}
	return f
}

// retryAfterMs is RetryAfter in milliseconds (rounded up), else a numeric
// Details["retryAfterMs"] (the convention of the provider adapters), else 0.
func (e *Error) retryAfterMs() int64 {
	if e.RetryAfter > 0 {
		return int64((e.RetryAfter + time.Millisecond - 1) / time.Millisecond)
	}
	switch v := e.Details["retryAfterMs"].(type) {
	case int:
		return int64(max(v, 0))
	case int64:
		return max(v, 0)
	case float64:
		return int64(max(math.Ceil(v), 0))
	}
	return 0
}

// CodeOf classifies any error: the code of the outermost *Error or declared-code Temporal
// ApplicationError in its chain (through activity, child-workflow, update and
// workflow-execution wrappers; see [Code.Declared]), EXECUTION_CANCELLED for cancellation,
// ACTIVITY_TIMEOUT for an activity that timed out, EXECUTION_FAILED for anything else, and ""
// for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	switch k := kortyxIn(err).(type) {
	case *Error:
		return k.Code
	case *temporal.ApplicationError:
		return Code(k.Type())
	}
	if temporal.IsCanceledError(err) || errors.Is(err, context.Canceled) {
		return CodeExecutionCancelled
	}
	if _, ok := activityTimeout(err); ok {
		return CodeActivityTimeout
	}
	return CodeExecutionFailed
}

// activityTimeout returns the activity error of an activity that failed with a timeout.
func activityTimeout(err error) (*temporal.ActivityError, bool) {
	var ae *temporal.ActivityError
	var te *temporal.TimeoutError
	if errors.As(err, &ae) && errors.As(ae, &te) {
		return ae, true
	}
	return nil, false
}

// IsControlFlow reports whether err stops a run on purpose rather than failing it: a
// cancellation (code EXECUTION_CANCELLED, a Temporal CanceledError, context.Canceled anywhere
// in the chain), an exhausted execution limit (EXECUTION_LIMIT_REACHED, which pauses the run
// for a Continue) or an exhausted budget (BUDGET_EXHAUSTED, which ends it). Such errors are never turned into tool errors shown to a model, never
// retried or corrected by nodes, and never collected as a branch failure: they propagate as is.
func IsControlFlow(err error) bool {
	if err == nil {
		return false
	}
	switch CodeOf(err) {
	case CodeExecutionCancelled, CodeExecutionLimitReached, CodeBudgetExhausted:
		return true
	}
	return temporal.IsCanceledError(err) || errors.Is(err, context.Canceled)
}

// FailureOf returns the descriptor of any error (see [CodeOf]), within the limits of
// a descriptor (failure.go); the descriptor attached to a Temporal ApplicationError by [ToTemporal] is
// recovered intact. Errors that are not Kortyx errors are never described: they become
// EXECUTION_FAILED "An unexpected error occurred." (or EXECUTION_CANCELLED), so that no
// internal text reaches clients. A failure that came back from an activity says which one in
// its context ("activity": the activity type, "retryState": why Temporal stopped retrying it),
// and a timed-out activity is ACTIVITY_TIMEOUT with the timeout type ("timeout").
func FailureOf(err error) Failure {
	if err == nil {
		return Failure{}
	}
	var f Failure
	switch k := kortyxIn(err).(type) {
	case *Error:
		return k.failure()
	case *temporal.ApplicationError:
		f = appFailure(k)
	default:
		code := CodeOf(err)
		msg := "An unexpected error occurred."
		switch code {
		case CodeExecutionCancelled:
			msg = "Execution cancelled."
		case CodeActivityTimeout:
			msg = "An activity did not complete in time."
		}
		f = Failure{Version: 1, Code: code, Category: code.Category(), Message: msg}
		if ae, ok := activityTimeout(err); ok {
			var te *temporal.TimeoutError
			errors.As(ae, &te)
			f.Message = fmt.Sprintf("Activity %s did not complete in time (%s timeout).", ae.ActivityType().GetName(), timeoutName(te))
			f.Retryable = true
			f.Context = map[string]any{"timeout": timeoutName(te)}
		}
	}
	return withActivity(f, err).limit()
}

// withActivity adds to f which activity failed, when err came back from one: "activity" (the
// activity type) and "retryState" (why Temporal stopped retrying it).
func withActivity(f Failure, err error) Failure {
	var ae *temporal.ActivityError
	if !errors.As(err, &ae) {
		return f
	}
	ctx := maps.Clone(f.Context) // a copy: the descriptor's map may be shared
	if ctx == nil {
		ctx = map[string]any{}
	}
	ctx["activity"] = ae.ActivityType().GetName()
	if rs := ae.RetryState(); rs != enumspb.RETRY_STATE_UNSPECIFIED {
		ctx["retryState"] = rs.String()
	}
	f.Context = ctx
	return f
}

// timeoutName is a timeout type as its Temporal UI name: "Heartbeat", "StartToClose"…
func timeoutName(te *temporal.TimeoutError) string {
	if te == nil {
		return "Unspecified"
	}
	return te.TimeoutType().String()
}

// appFailure is the descriptor of a coded ApplicationError: the one in its details when it is
// of the same code, else one made of its type, message and retry options.
func appFailure(ae *temporal.ApplicationError) Failure {
	var f Failure
	if ae.HasDetails() && ae.Details(&f) == nil && f.Code == Code(ae.Type()) {
		return f
	}
	code := Code(ae.Type())
	return Failure{Version: 1, Code: code, Category: code.Category(), Message: ae.Message(),
		Retryable: !ae.NonRetryable(), RetryAfterMs: ae.NextRetryDelay().Milliseconds()}
}

// ToTemporal converts an error into the form that crosses Temporal boundaries: an *Error becomes
// an ApplicationError whose Type is the code, whose details hold the [Failure] descriptor and
// whose next retry delay is RetryAfter (when retryable). An error whose outermost Kortyx error
// is already a coded ApplicationError, and any other error, is returned unchanged.
func ToTemporal(err error) error {
	ke, ok := kortyxIn(err).(*Error)
	if !ok {
		return err
	}
	opts := temporal.ApplicationErrorOptions{
		NonRetryable: !ke.Retryable,
		Cause:        ke.Err,
		Details:      []any{ke.failure()},
	}
	if ke.Retryable && ke.RetryAfter > 0 {
		opts.NextRetryDelay = ke.RetryAfter
	}
	return temporal.NewApplicationErrorWithOptions(ke.Error(), string(ke.Code), opts)
}

// kortyxIn returns the outermost *Error or declared-code *temporal.ApplicationError in err's chain
// (depth first, in the order of errors.As), or nil.
func kortyxIn(err error) error {
	for err != nil {
		switch e := err.(type) {
		case *Error:
			if e == nil {
				return nil
			}
			return e
		case *temporal.ApplicationError:
			if e == nil {
				return nil
			}
			if isCode(e.Type()) {
				return e
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if k := kortyxIn(e); k != nil {
					return k
				}
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}

func isCode(s string) bool {
	return Code(s).Declared()
}
