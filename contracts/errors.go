package contracts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// Code is a stable, machine-readable failure code. Wire values are SCREAMING_SNAKE and never change.
type Code string

// Failure codes (spec F4.1). A Code crosses activity, workflow and process boundaries as the
// Type of a Temporal ApplicationError; classify any error with [CodeOf].
const (
	CodeProviderHTTPError                 Code = "PROVIDER_HTTP_ERROR"
	CodeProviderTransportError            Code = "PROVIDER_TRANSPORT_ERROR"
	CodeProviderRequestFailed             Code = "PROVIDER_REQUEST_FAILED"
	CodeProviderInvalidResponse           Code = "PROVIDER_INVALID_RESPONSE"
	CodeProviderRefusal                   Code = "PROVIDER_REFUSAL"
	CodeProviderConfiguration             Code = "PROVIDER_CONFIGURATION"
	CodeModelOutputSchema                 Code = "MODEL_OUTPUT_SCHEMA"
	CodeInvalidModelJSON                  Code = "INVALID_MODEL_JSON"
	CodeOutputTruncated                   Code = "OUTPUT_TRUNCATED"
	CodeSchemaValidation                  Code = "SCHEMA_VALIDATION"
	CodeInvalidOutput                     Code = "INVALID_OUTPUT"
	CodeWorkflowContractError             Code = "WORKFLOW_CONTRACT_ERROR"
	CodeWorkflowCallFailed                Code = "WORKFLOW_CALL_FAILED"
	CodeParallelFailed                    Code = "PARALLEL_FAILED"
	CodePersistenceError                  Code = "PERSISTENCE_ERROR"
	CodeChatLifecycleHookFailed           Code = "CHAT_LIFECYCLE_HOOK_FAILED"
	CodeResumeFailed                      Code = "RESUME_FAILED"
	CodeInvalidRequest                    Code = "INVALID_REQUEST"
	CodeInvalidInput                      Code = "INVALID_INPUT"
	CodeInvalidResume                     Code = "INVALID_RESUME"
	CodeInvalidResponse                   Code = "INVALID_RESPONSE"
	CodeResumeMismatch                    Code = "RESUME_MISMATCH"
	CodeInvalidSession                    Code = "INVALID_SESSION"
	CodeMissingContract                   Code = "MISSING_CONTRACT"
	CodeContractMismatch                  Code = "CONTRACT_MISMATCH"
	CodeNotFound                          Code = "NOT_FOUND"
	CodeUnknownWorkflow                   Code = "UNKNOWN_WORKFLOW"
	CodeMalformedStream                   Code = "MALFORMED_STREAM"
	CodeTruncatedStream                   Code = "TRUNCATED_STREAM"
	CodeExecutionCancelled                Code = "EXECUTION_CANCELLED"
	CodeExecutionLimitReached             Code = "EXECUTION_LIMIT_REACHED"
	CodeExecutionFailed                   Code = "EXECUTION_FAILED"
	CodeDomainError                       Code = "DOMAIN_ERROR"
	CodeReasonOutputBudgetExhausted       Code = "REASON_OUTPUT_BUDGET_EXHAUSTED"
	CodeReasonOutputContractCorrectionExh Code = "REASON_OUTPUT_CONTRACT_CORRECTION_EXHAUSTED"
	CodeReasonTerminalOutputMissing       Code = "REASON_TERMINAL_OUTPUT_MISSING"
	CodeReasonOutputSchemaCorrectionExh   Code = "REASON_OUTPUT_SCHEMA_CORRECTION_EXHAUSTED"

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
)

// Category groups codes for HTTP mapping and dashboards (spec F4.1).
type Category string

// Failure categories.
const (
	CategoryConfiguration Category = "configuration"
	CategoryProvider      Category = "provider"
	CategoryValidation    Category = "validation"
	CategoryDomain        Category = "domain"
	CategoryWorkflow      Category = "workflow"
	CategoryPersistence   Category = "persistence"
	CategoryRequest       Category = "request"
	CategoryTransport     Category = "transport"
	CategoryInternal      Category = "internal"
)

// Category returns the category a code belongs to.
func (c Code) Category() Category {
	switch c {
	case CodeProviderConfiguration, CodeInvalidDefinition, CodeUnknownTool:
		return CategoryConfiguration
	case CodeProviderHTTPError, CodeProviderTransportError, CodeProviderRequestFailed,
		CodeProviderInvalidResponse, CodeProviderRefusal:
		return CategoryProvider
	case CodeModelOutputSchema, CodeInvalidModelJSON, CodeOutputTruncated, CodeSchemaValidation,
		CodeInvalidOutput, CodeReasonOutputBudgetExhausted, CodeReasonOutputContractCorrectionExh,
		CodeReasonTerminalOutputMissing, CodeReasonOutputSchemaCorrectionExh, CodeInvalidInterrupt,
		CodePayloadTooLarge, CodeReasonMaxSteps, CodeInvalidToolCall, CodeReasonMaxEmissions, CodeReasonMaxRequests,
		CodeReasonInterruptRequired:
		return CategoryValidation
	case CodeWorkflowContractError, CodeWorkflowCallFailed, CodeParallelFailed, CodeHookOutsideNode,
		CodeExecutionCancelled, CodeExecutionLimitReached:
		return CategoryWorkflow
	case CodePersistenceError, CodeChatLifecycleHookFailed:
		return CategoryPersistence
	case CodeResumeFailed, CodeInvalidRequest, CodeInvalidInput, CodeInvalidResume, CodeInvalidResponse,
		CodeResumeMismatch, CodeInvalidSession, CodeMissingContract, CodeContractMismatch, CodeNotFound,
		CodeUnknownWorkflow:
		return CategoryRequest
	case CodeMalformedStream, CodeTruncatedStream:
		return CategoryTransport
	case CodeDomainError:
		return CategoryDomain
	}
	return CategoryInternal
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
	return PathString(i.Path) + ": " + i.Message
}

// PathString renders a path as "a.b[2].c"; the empty path is "(root)".
func PathString(path []any) string {
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

// Error is the one error type of this module. Match it with [CodeOf] or errors.Is against an
// *Error carrying only a Code.
type Error struct {
	Code      Code
	Message   string         // safe to show to end users; says what to fix
	Retryable bool           // whether retrying the same call may succeed
	Status    int            // HTTP status of an upstream failure, if any
	Details   map[string]any // small structured facts (limits, counts, names)
	Issues    []Issue        // per-field problems of a validation failure
	Err       error          // cause, if any
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
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

// Failure returns the serializable descriptor of this error.
func (e *Error) Failure() Failure {
	return Failure{
		Version:   1,
		Code:      e.Code,
		Category:  e.Code.Category(),
		Message:   truncate(e.Error(), 1024),
		Retryable: e.Retryable,
		Status:    e.Status,
		Details:   e.Details,
		Issues:    limitIssues(e.Issues),
	}
}

// Failure is the serializable failure descriptor (spec F4.1) carried in error chunks, HTTP error
// bodies and Temporal failure details.
type Failure struct {
	Version   int            `json:"version"`
	Code      Code           `json:"code"`
	Category  Category       `json:"category"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Status    int            `json:"status,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
	Issues    []Issue        `json:"issues,omitempty"`
}

// Err turns a descriptor back into an *Error.
func (f Failure) Err() *Error {
	return &Error{Code: f.Code, Message: f.Message, Retryable: f.Retryable, Status: f.Status,
		Details: f.Details, Issues: f.Issues}
}

// CodeOf classifies any error: an *Error's code, a Temporal ApplicationError's Type (through
// activity, child-workflow, update and workflow-execution wrappers), EXECUTION_CANCELLED for
// cancellation, EXECUTION_FAILED for anything else, and "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var ke *Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Type() != "" && isCode(ae.Type()) {
		return Code(ae.Type())
	}
	if temporal.IsCanceledError(err) || errors.Is(err, context.Canceled) {
		return CodeExecutionCancelled
	}
	return CodeExecutionFailed
}

// FailureOf returns the descriptor of any error (see [CodeOf]); the descriptor attached to a
// Temporal ApplicationError by [ToTemporal] is recovered intact.
func FailureOf(err error) Failure {
	if err == nil {
		return Failure{}
	}
	var ke *Error
	if errors.As(err, &ke) {
		return ke.Failure()
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && isCode(ae.Type()) {
		var f Failure
		if ae.HasDetails() && ae.Details(&f) == nil && f.Code != "" {
			return f
		}
		return Failure{Version: 1, Code: Code(ae.Type()), Category: Code(ae.Type()).Category(),
			Message: truncate(ae.Message(), 1024), Retryable: !ae.NonRetryable()}
	}
	code := CodeOf(err)
	msg := "An unexpected error occurred."
	if code == CodeExecutionCancelled {
		msg = "Execution cancelled."
	}
	return Failure{Version: 1, Code: code, Category: code.Category(), Message: msg}
}

// ToTemporal converts an error into the form that crosses Temporal boundaries: an *Error becomes
// an ApplicationError whose Type is the code and whose details hold the [Failure] descriptor.
// Other errors are returned unchanged.
func ToTemporal(err error) error {
	var ke *Error
	if err == nil || !errors.As(err, &ke) {
		return err
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(ke.Error(), string(ke.Code), temporal.ApplicationErrorOptions{
		NonRetryable: !ke.Retryable,
		Cause:        ke.Err,
		Details:      []any{ke.Failure()},
	})
}

func isCode(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && r != '_' && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func limitIssues(in []Issue) []Issue {
	if len(in) > 20 {
		return in[:20]
	}
	return in
}
