package contracts

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a failure descriptor (spec F4.1), enforced by [Failure.Limit].
const (
	// MaxFailureDepth is how many levels of nested descriptors (cause, results[].failure) a
	// descriptor holds below the root; it also bounds the nesting of maps and lists in details
	// and context (the details map itself being level 1).
	MaxFailureDepth = 4
	// MaxFailureMessage is the length of a message, in characters.
	MaxFailureMessage = 1024
	// MaxFailureString is the length of any other string (source, operation, domainCode,
	// finishReason, issue codes, messages and path keys, and strings in details and context),
	// in characters.
	MaxFailureString = 256
	// MaxFailureIssues is the number of issues kept.
	MaxFailureIssues = 20
	// MaxFailureResults is the number of results kept.
	MaxFailureResults = 64
	// MaxFailureKeys is the number of keys kept in details and context (and in the maps
	// nested in them), and the number of items kept in their lists.
	MaxFailureKeys = 32
	// MaxFailureBytes is the size of the serialized (JSON) descriptor, beyond which it is
	// compacted.
	MaxFailureBytes = 32 << 10
)

// FailureTruncatedNote ends the message of a descriptor that was compacted to fit
// [MaxFailureBytes].
const FailureTruncatedNote = "Failure details were truncated."

// Outcomes of one branch in a [FailureResult].
const (
	FailureResultFulfilled = "fulfilled"
	FailureResultRejected  = "rejected"
)

// FailureResult is the outcome of one branch of a parallel group (PARALLEL_FAILED): Status is
// [FailureResultFulfilled] or [FailureResultRejected], Failure describes a rejection.
type FailureResult struct {
	Status  string   `json:"status"`
	Failure *Failure `json:"failure,omitempty"`
}

// Failure is the serializable failure descriptor (spec F4.1) carried in error chunks, HTTP error
// bodies and Temporal failure details. Build one with [(*Error).Failure] or [FailureOf]; both
// keep it within the limits of [Failure.Limit].
type Failure struct {
	Version  int      `json:"version"`
	Code     Code     `json:"code"`
	Category Category `json:"category"`
	Message  string   `json:"message"` // safe to show to end users
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
// [MaxFailureDepth] levels are dropped; the message is cut to [MaxFailureMessage] characters and
// other strings to [MaxFailureString]; at most [MaxFailureIssues] issues, [MaxFailureResults]
// results and [MaxFailureKeys] keys per map are kept (the first keys in sorted order). Whatever
// is cut sets Truncated. If the JSON form is still larger than [MaxFailureBytes] (or cannot be
// serialized), the descriptor is compacted: context, then the extras of nested descriptors,
// then the results' failures, details, issues, and finally results and cause are dropped until
// it fits, and the message ends with [FailureTruncatedNote]. f itself is not modified.
func (f Failure) Limit() Failure {
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
	f.Message = str(f.Message, MaxFailureMessage)
	f.Source = str(f.Source, MaxFailureString)
	f.Operation = str(f.Operation, MaxFailureString)
	f.DomainCode = str(f.DomainCode, MaxFailureString)
	if f.FinishReason != nil {
		fr := FinishReason{Unified: str(f.FinishReason.Unified, MaxFailureString),
			Raw: str(f.FinishReason.Raw, MaxFailureString)}
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
		if depth >= MaxFailureDepth {
			f.Cause, cut = nil, true
		} else {
			cause := limitFailure(*f.Cause, depth+1)
			f.Cause = &cause
			cut = cut || cause.Truncated
		}
	}
	if f.Results != nil {
		results := f.Results
		if len(results) > MaxFailureResults {
			results, cut = results[:MaxFailureResults], true
		}
		f.Results = make([]FailureResult, len(results))
		for i, r := range results {
			if r.Failure != nil {
				if depth >= MaxFailureDepth {
					r.Failure, cut = nil, true
				} else {
					rf := limitFailure(*r.Failure, depth+1)
					r.Failure = &rf
					cut = cut || rf.Truncated
				}
			}
			r.Status = str(r.Status, MaxFailureString)
			f.Results[i] = r
		}
	}
	f.Truncated = f.Truncated || cut
	return f
}

// compactFailure drops parts of f, least useful first, until its JSON form fits MaxFailureBytes.
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

// withTruncatedNote ends msg with FailureTruncatedNote, keeping it within MaxFailureMessage
// characters.
func withTruncatedNote(msg string) string {
	if strings.HasSuffix(msg, FailureTruncatedNote) {
		return msg
	}
	if msg == "" {
		return FailureTruncatedNote
	}
	msg, _ = truncateString(msg, MaxFailureMessage-utf8.RuneCountInString(FailureTruncatedNote)-1)
	return msg + " " + FailureTruncatedNote
}

func fitsFailureBytes(f Failure) bool {
	b, err := json.Marshal(f)
	return err == nil && len(b) <= MaxFailureBytes
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
	if len(in) > MaxFailureIssues {
		in, cut = in[:MaxFailureIssues], true
	}
	out := make([]Issue, len(in))
	for i, is := range in {
		var c1, c2 bool
		is.Code, c1 = truncateString(is.Code, MaxFailureString)
		is.Message, c2 = truncateString(is.Message, MaxFailureString)
		cut = cut || c1 || c2
		if is.Path != nil {
			path := make([]any, len(is.Path))
			for j, seg := range is.Path {
				if s, ok := seg.(string); ok {
					var c bool
					seg, c = truncateString(s, MaxFailureString)
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
// context are level 1), keeping its first MaxFailureKeys keys in sorted order and limiting
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
	if len(keys) > MaxFailureKeys {
		keys, cut = keys[:MaxFailureKeys], true
	}
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		key, c1 := truncateString(k, MaxFailureString)
		v, c2 := limitValue(m[k], level)
		cut = cut || c1 || c2
		out[key] = v
	}
	return out, cut
}

// limitValue limits a value held in a map or list at the given level: strings are cut, maps
// and lists are limited in turn, and maps and lists that would sit deeper than
// MaxFailureDepth levels become nil. A value within the limits is returned as is.
func limitValue(v any, level int) (any, bool) {
	var out any
	var cut bool
	switch t := v.(type) {
	case string:
		return truncateString(t, MaxFailureString)
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
// it would sit deeper than MaxFailureDepth levels.
func limitNested(level int, limit func() (any, bool)) (any, bool) {
	if level >= MaxFailureDepth {
		return nil, true
	}
	return limit()
}

func limitList[V any](in []V, level int) ([]any, bool) {
	var cut bool
	if len(in) > MaxFailureKeys {
		in, cut = in[:MaxFailureKeys], true
	}
	out := make([]any, len(in))
	for i, v := range in {
		var c bool
		out[i], c = limitValue(v, level)
		cut = cut || c
	}
	return out, cut
}
