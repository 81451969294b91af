package web

import (
	"net/http"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	enums "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// failureView is a failure as the studio shows it: its code and safe message (the descriptor's,
// [contracts.FailureOf], never the Go error chain), where it happened when known, and, for an
// operator who asks (?raw=1), the raw cause.
type failureView struct {
	Code    contracts.Code `json:"code"`
	Message string         `json:"message"`
	// Node is the node of the failing activity (or the run's failing node, when its failure
	// names one).
	Node string `json:"node,omitempty"`
	// Activity is the activity type that failed (kortyx.ListTools, kortyx.Model, …) and Attempt
	// its last attempt.
	Activity string `json:"activity,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	// Raw is the failure's own text and its causes' (each once), for operators: set only when
	// the request asks ?raw=1 and Options.RawFailures allows it.
	Raw string `json:"raw,omitempty"`
}

// describer turns the failures of a history into [failureView]s, decoding their details with
// the history's data converter.
type describer struct {
	fc converter.FailureConverter
}

func newDescriber(dc converter.DataConverter) describer {
	return describer{fc: temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc})}
}

// view is f's code and safe message, classified from its structure (an ApplicationError's
// type and the descriptor in its details, a timeout's type) by contracts.FailureOf, and its
// raw text; activity and node from the descriptor's context when it names them.
func (d describer) view(f *failurepb.Failure) *failureView {
	if f == nil {
		return nil
	}
	desc := contracts.FailureOf(d.fc.FailureToError(f))
	v := &failureView{Code: desc.Code, Message: desc.Message, Raw: rawText(f)}
	if a, ok := desc.Context["activity"].(string); ok {
		v.Activity = a
	}
	if n, ok := desc.Details["node"].(string); ok {
		v.Node = n
	}
	return v
}

// rawText is the messages of f and its causes, one a line, each once: a cause whose text the
// line above already holds (a Go error chain repeats its causes) is left out.
func rawText(f *failurepb.Failure) string {
	var lines []string
	for ; f != nil && len(lines) < 8; f = f.GetCause() {
		m := strings.TrimSpace(f.GetMessage())
		if m == "" || (len(lines) > 0 && strings.Contains(lines[len(lines)-1], m)) {
			continue
		}
		lines = append(lines, m)
	}
	return strings.Join(lines, "\n")
}

// rawAllowed reports whether r asks for raw failures (?raw=1) and may read them: what
// Options.RawFailures says, or without it, only a studio open without authorization
// (AllowUnauthenticated, development). A request that asks and may not is FORBIDDEN.
func (o Options) rawAllowed(r *http.Request) (bool, error) {
	if r.URL.Query().Get("raw") != "1" {
		return false, nil
	}
	if o.mayReadRaw(r) {
		return true, nil
	}
	return false, &contracts.Error{Code: contracts.CodeForbidden, Message: "Raw failures are for operators: ask without raw=1."}
}

// mayReadRaw reports whether r may read raw failures.
func (o Options) mayReadRaw(r *http.Request) bool {
	if o.RawFailures != nil {
		return o.RawFailures(r)
	}
	return o.Authorize == nil && o.AllowUnauthenticated
}

// stripRaw removes the raw causes of tl's failures.
func (tl *timeline) stripRaw() {
	if tl.Failure != nil {
		tl.Failure.Raw = ""
	}
	for i := range tl.Entries {
		e := &tl.Entries[i]
		for _, f := range []*failureView{e.Failure, e.LastFailure} {
			if f != nil {
				f.Raw = ""
			}
		}
		if e.Pending != nil && e.Pending.LastFailure != nil {
			e.Pending.LastFailure.Raw = ""
		}
	}
}

// errorOf is a list row's error: a failed run's code and message.
type rowError struct {
	Code    contracts.Code `json:"code"`
	Message string         `json:"message"`
}

// endedByTemporal is the error of a run that Temporal ended without a failure of the run's own
// (nil for any other status): TERMINATED or TIMED_OUT, as the overview counts them.
func endedByTemporal(s enums.WorkflowExecutionStatus) *rowError {
	switch s {
	case enums.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return &rowError{Code: "TERMINATED", Message: "The run was terminated."}
	case enums.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return &rowError{Code: "TIMED_OUT", Message: "The run timed out."}
	}
	return nil
}

// timedOut is the view of an activity's timeout (an ActivityTaskTimedOut event's failure, whose
// cause is the last attempt's failure): ACTIVITY_TIMEOUT, as contracts.FailureOf names the
// timeout of an activity the workflow awaited.
func (d describer) timedOut(f *failurepb.Failure, activity string) *failureView {
	v := d.view(f)
	if v == nil {
		v = &failureView{}
	}
	if ti := f.GetTimeoutFailureInfo(); ti != nil {
		var name string // the Temporal UI's name of the timeout: START_TO_CLOSE is StartToClose
		for _, w := range strings.Split(strings.TrimPrefix(ti.GetTimeoutType().String(), "TIMEOUT_TYPE_"), "_") {
			if w != "" {
				name += w[:1] + strings.ToLower(w[1:])
			}
		}
		v.Code = contracts.CodeActivityTimeout
		v.Message = "Activity " + activity + " did not complete in time (" + name + " timeout)."
	}
	return v
}
