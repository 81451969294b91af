package contracts

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a failure descriptor (spec F4.1), enforced whenever a descriptor is built.
const (
	// maxFailureDepth is how many levels of nested descriptors (cause, results[].failure) a
	// descriptor holds below the root; it also bounds the nesting of maps and lists in details
	// and context (the details map itself being level 1).
	maxFailureDepth = 4
	// maxFailureMessage is the length of a message, in characters.
	maxFailureMessage = 1024
	// maxFailureString is the length of any other string (source, operation, domainCode,
	// finishReason, issue codes, messages and path keys, and strings in details and context),
	// in characters.
	maxFailureString = 256
	// maxFailureIssues is the number of issues kept.
	maxFailureIssues = 20
	// maxFailureResults is the number of results kept.
	maxFailureResults = 64
	// maxFailureKeys is the number of keys kept in details and context (and in the maps
	// nested in them), and the number of items kept in their lists.
	maxFailureKeys = 32
	// maxFailureBytes is the size of the serialized (JSON) descriptor, beyond which it is
	// compacted.
	maxFailureBytes = 32 << 10
)

// failureTruncatedNote ends the message of a descriptor that was compacted to fit
// maxFailureBytes.
const failureTruncatedNote = "Failure details were truncated."

// Outcomes of one branch in a [FailureResult].
const (
	failureResultFulfilled = "fulfilled"
	failureResultRejected  = "rejected"
)

// FailureResult is the outcome of one branch of a parallel group (PARALLEL_FAILED): Status is
// failureResultFulfilled or failureResultRejected, Failure describes a rejection.
type FailureResult struct {
	Status  string   `json:"status"`
	Failure *Failure `json:"failure,omitempty"`
}

// Failure is the serializable failure descriptor (spec F4.1) carried in error chunks, HTTP error
// bodies and Temporal failure details. Build one with [FailureOf], which keeps
// it within these limits (failure.go).
type Failure struct {
	Version  int    `json:"version"`
	Code     Code   `json:"code"`
	Category string `json:"category"`
	Message  string `json:"message"` // safe to show to end users
	// Retryable says whether retrying the same call may succeed. The spec allows null for
	// "unknown"; here false covers both "no" and "unknown".
	Retryable    bool            `json:"retryable"`
	Source       string          `json:"source,omitempty"`       // what failed: provider, tool, workflow, store
	Operation    string          `json:"operation,omitempty"`    // what it was doing
	Status       int             `json:"status,omitempty"`       // HTTP status of an upstream failure
	RetryAfterMs int64           `json:"retryAfterMs,omitempty"` // wait asked by the upstream
	DomainCode   string          `json:"domainCode,omitempty"`   // application code of a DOMAIN_ERROR
	Details      map[string]any  `json:"details,omitempty"`
	Issues       []Issue         `json:"issues,omitempty"`
	Usage        *Usage          `json:"usage,omitempty"`
	FinishReason *FinishReason   `json:"finishReason,omitempty"`
	Context      map[string]any  `json:"context,omitempty"`
	Cause        *Failure        `json:"cause,omitempty"`
	Results      []FailureResult `json:"results,omitempty"`
	// Truncated reports that something was cut to fit the limits, here or in a nested
	// descriptor.
	Truncated bool `json:"truncated,omitempty"`
}

// Err turns a descriptor back into an *Error (the cause, if any, becomes its Err).
func (f Failure) Err() *Error {
	e := &Error{Code: f.Code, Message: f.Message, Retryable: f.Retryable, Status: f.Status,
		Details: f.Details, Issues: f.Issues, DomainCode: f.DomainCode, Source: f.Source,
		Operation: f.Operation, RetryAfter: time.Duration(f.RetryAfterMs) * time.Millisecond,
		Usage: f.Usage, FinishReason: f.FinishReason, Context: f.Context, Results: f.Results}
	if f.Cause != nil {
		e.Err = f.Cause.Err()
	}
	return e
}

// Limit returns a copy of f within the spec's limits: nested descriptors beyond
// maxFailureDepth levels are dropped; the message is cut to maxFailureMessage characters and
// other strings to maxFailureString; at most maxFailureIssues issues, maxFailureResults
// results and maxFailureKeys keys per map are kept (the first keys in sorted order). Whatever
// is cut sets Truncated. If the JSON form is still larger than maxFailureBytes (or cannot be
// serialized), the descriptor is compacted: context, then the extras of nested descriptors,
// then the results' failures, details, issues, and finally results and cause are dropped until
// it fits, and the message ends with failureTruncatedNote. f itself is not modified.
func (f Failure) limit() Failure {
	out := limitFailure(f, 0)
	if fitsFailureBytes(out) {
		return out
	}
	return compactFailure(out)
}

// limitFailure applies the per-field limits to f, a descriptor at the given nesting depth
// (0 for the root). Nested descriptors and the results slice of the result are fresh copies,
// so compactFailure may modify them; details and context maps are shared when within the limits, and
// never modified.
func limitFailure(f Failure, depth int) Failure {
	var cut bool
	str := func(s string, n int) string {
		t, c := truncateString(s, n)
		cut = cut || c
		return t
	}
	f.Message = str(f.Message, maxFailureMessage)
	f.Source = str(f.Source, maxFailureString)
	f.Operation = str(f.Operation, maxFailureString)
	f.DomainCode = str(f.DomainCode, maxFailureString)
	if f.FinishReason != nil {
		fr := FinishReason{Unified: str(f.FinishReason.Unified, maxFailureString),
			Raw: str(f.FinishReason.Raw, maxFailureString)}
		f.FinishReason = &fr
	}
	if f.Usage != nil {
		u := *f.Usage
		f.Usage = &u
	}
	if d, c := limitMap(f.Details, 1); c {
		f.Details, cut = d, true
	}
	if d, c := limitMap(f.Context, 1); c {
		f.Context, cut = d, true
	}
	var c bool
	f.Issues, c = limitIssues(f.Issues)
	cut = cut || c

	if f.Cause != nil {
		if depth >= maxFailureDepth {
			f.Cause, cut = nil, true
		} else {
			cause := limitFailure(*f.Cause, depth+1)
			f.Cause = &cause
			cut = cut || cause.Truncated
		}
	}
	if f.Results != nil {
		results := f.Results
		if len(results) > maxFailureResults {
			results, cut = results[:maxFailureResults], true
		}
		f.Results = make([]FailureResult, len(results))
		for i, r := range results {
			if r.Failure != nil {
				if depth >= maxFailureDepth {
					r.Failure, cut = nil, true
				} else {
					rf := limitFailure(*r.Failure, depth+1)
					r.Failure = &rf
					cut = cut || rf.Truncated
				}
			}
			r.Status = str(r.Status, maxFailureString)
			f.Results[i] = r
		}
	}
	f.Truncated = f.Truncated || cut
	return f
}

// compactFailure drops parts of f, least useful first, until its JSON form fits maxFailureBytes.
func compactFailure(f Failure) Failure {
	f.Truncated = true
	f.Message = withTruncatedNote(f.Message)
	steps := []func(*Failure){
		func(f *Failure) { eachFailure(f, 0, func(g *Failure, _ int) { g.Context = nil }) },
		func(f *Failure) {
			eachFailure(f, 0, func(g *Failure, depth int) {
				if depth > 0 {
					g.Details, g.Issues, g.Usage, g.FinishReason, g.Truncated = nil, nil, nil, nil, true
				}
			})
		},
		func(f *Failure) {
			for i := range f.Results {
				f.Results[i].Failure = nil
			}
		},
		func(f *Failure) { f.Details = nil },
		func(f *Failure) { f.Issues = nil },
		func(f *Failure) { f.Results, f.Cause = nil, nil },
	}
	for _, step := range steps {
		step(&f)
		if fitsFailureBytes(f) {
			break
		}
	}
	return f
}

// eachFailure calls fn on f and every descriptor nested in it, with its depth.
func eachFailure(f *Failure, depth int, fn func(*Failure, int)) {
	fn(f, depth)
	if f.Cause != nil {
		eachFailure(f.Cause, depth+1, fn)
	}
	for _, r := range f.Results {
		if r.Failure != nil {
			eachFailure(r.Failure, depth+1, fn)
		}
	}
}

// withTruncatedNote ends msg with failureTruncatedNote, keeping it within maxFailureMessage
// characters.
func withTruncatedNote(msg string) string {
	if strings.HasSuffix(msg, failureTruncatedNote) {
		return msg
	}
	if msg == "" {
		return failureTruncatedNote
	}
	msg, _ = truncateString(msg, maxFailureMessage-utf8.RuneCountInString(failureTruncatedNote)-1)
	return msg + " " + failureTruncatedNote
}

func fitsFailureBytes(f Failure) bool {
	b, err := json.Marshal(f)
	return err == nil && len(b) <= maxFailureBytes
}

// truncateString cuts s to at most n characters, the last one being "…", and reports whether
// it did.
func truncateString(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…", true
}

func limitIssues(in []Issue) ([]Issue, bool) {
	if in == nil {
		return nil, false
	}
	var cut bool
	if len(in) > maxFailureIssues {
		in, cut = in[:maxFailureIssues], true
	}
	out := make([]Issue, len(in))
	for i, is := range in {
		var c1, c2 bool
		is.Code, c1 = truncateString(is.Code, maxFailureString)
		is.Message, c2 = truncateString(is.Message, maxFailureString)
		cut = cut || c1 || c2
		if is.Path != nil {
			path := make([]any, len(is.Path))
			for j, seg := range is.Path {
				if s, ok := seg.(string); ok {
					var c bool
					seg, c = truncateString(s, maxFailureString)
					cut = cut || c
				}
				path[j] = seg
			}
			is.Path = path
		}
		out[i] = is
	}
	return out, cut
}

// limitMap returns a limited copy of m, a map at the given level of nesting (details and
// context are level 1), keeping its first maxFailureKeys keys in sorted order and limiting
// their values, and reports whether anything was cut. When nothing was, m itself may be used.
func limitMap[V any](m map[string]V, level int) (map[string]any, bool) {
	if m == nil {
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var cut bool
	if len(keys) > maxFailureKeys {
		keys, cut = keys[:maxFailureKeys], true
	}
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		key, c1 := truncateString(k, maxFailureString)
		v, c2 := limitValue(m[k], level)
		cut = cut || c1 || c2
		out[key] = v
	}
	return out, cut
}

// limitValue limits a value held in a map or list at the given level: strings are cut, maps
// and lists are limited in turn, and maps and lists that would sit deeper than
// maxFailureDepth levels become nil. A value within the limits is returned as is.
func limitValue(v any, level int) (any, bool) {
	var out any
	var cut bool
	switch t := v.(type) {
	case string:
		return truncateString(t, maxFailureString)
	case map[string]any:
		out, cut = limitNested(level, func() (any, bool) { return limitMap(t, level+1) })
	case map[string]string:
		out, cut = limitNested(level, func() (any, bool) { return limitMap(t, level+1) })
	case []any:
		out, cut = limitNested(level, func() (any, bool) { return limitList(t, level+1) })
	case []string:
		out, cut = limitNested(level, func() (any, bool) { return limitList(t, level+1) })
	}
	if !cut {
		return v, false
	}
	return out, true
}

// limitNested limits a map or list held at the given level with limit, or drops it (nil) when
// it would sit deeper than maxFailureDepth levels.
func limitNested(level int, limit func() (any, bool)) (any, bool) {
	if level >= maxFailureDepth {
		return nil, true
	}
	return limit()
}

func limitList[V any](in []V, level int) ([]any, bool) {
	var cut bool
	if len(in) > maxFailureKeys {
		in, cut = in[:maxFailureKeys], true
	}
	out := make([]any, len(in))
	for i, v := range in {
		var c bool
		out[i], c = limitValue(v, level)
		cut = cut || c
	}
	return out, cut
}
