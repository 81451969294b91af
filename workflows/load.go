package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/kortyx-go/kortyx/contracts"
)

// Workflow file name suffixes read by [Registry.AddDir].
var fileSuffixes = []string{".workflow.json", ".workflow.yaml", ".workflow.yml"}

// Load reads a workflow definition from YAML or JSON text and validates it (see
// [Definition.Validate]). Text that starts with "{" or "[" (after white space) is JSON, anything
// else YAML; empty text is the empty object.
//
// The format mirrors Kortyx and is strict: a key it does not define is an error.
//
//	id: support            # required, non-empty string
//	version: "1.0.0"       # required, non-empty string (quote numbers)
//	description: ...       # optional string
//	inputSchema: {...}     # optional JSON Schema object, compiled with contracts.CompileSchema
//	outputSchema: {...}    # optional JSON Schema object
//	metadata: {...}        # optional, free-form
//	fastPath: true         # optional boolean: model passes run as local activities (Definition.FastPath)
//	budget: {maxTokens: 1000000, period: month}  # optional: the agent's shared budget (Definition.Budget)
//	nodes:                 # required, node id → node
//	  classify:
//	    run: classify      # required: a node function registered with Registry.RegisterNode
//	    params: {...}      # optional, passed to every call
//	    metadata: {...}    # optional, free-form
//	    children: [topic]  # optional: the workflow ids the node starts as child workflows (Node.Children)
//	    behavior:
//	      retry: {maxAttempts: 3, delayMs: 500}  # maxAttempts defaults to 1, must be >= 1
//	      onError: {mode: emit-and-stop}         # accepted and ignored (see below)
//	edges:                 # required: [from, to] or [from, to, {when: condition}]
//	  - [__start__, classify]
//	  - [classify, answer, {when: question}]
//
// behavior.onError is validated (mode is one of "emit-and-stop", "silent", "emit-and-continue",
// "rethrow") but has no effect: a node that fails after its attempts fails the run.
//
// Numbers inside params and metadata become float64, as encoding/json decodes them into any,
// so a definition loaded from a file equals the same definition written in Go with float64
// values; maxAttempts and delayMs must be integers.
//
// Load reports every problem at once: the error is a *[contracts.Error] with code
// INVALID_DEFINITION whose Issues hold one entry per problem with its path (for example
// ["nodes", "start", "foo"] for an unknown key of node "start", ["edges", 2, 1] for the target of
// the third edge), sorted by path. A YAML or JSON syntax error is a single issue at the root
// (code invalid_value) whose message gives the line and column. Graph checks that would only
// report consequences of an unreadable "nodes" or edge (reachability, the missing start edge)
// are skipped until that is fixed.
func Load(data []byte) (*Definition, error) {
	d, issues := loadDefinition(data)
	if err := invalidError(d.ID, issues); err != nil {
		return nil, err
	}
	return d, nil
}

func readWorkflowFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &contracts.Error{Code: contracts.CodeInvalidDefinition,
			Message: fmt.Sprintf("cannot read workflow file: %v", err),
			Details: map[string]any{"file": path}, Err: err}
	}
	return data, nil
}

// inFile makes a definition error name its file: the message starts with the path, which is
// also in Details under "file".
func inFile(path string, err error) error {
	var ke *contracts.Error
	if errors.As(err, &ke) {
		ke.Message = path + ": " + ke.Message
		ke.Details = map[string]any{"file": path}
	}
	return err
}

// workflowFiles lists the workflow files of dir (see [Registry.AddDir]) in name order.
func workflowFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &contracts.Error{Code: contracts.CodeInvalidDefinition,
			Message: fmt.Sprintf("cannot read workflow directory: %v", err),
			Details: map[string]any{"dir": dir}, Err: err}
	}
	var out []string
	for _, e := range entries { // os.ReadDir sorts by name
		if !e.IsDir() && isWorkflowFile(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

func isWorkflowFile(name string) bool {
	for _, s := range fileSuffixes {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			return true
		}
	}
	return false
}

// loadDefinition parses and checks data; it always returns a Definition (possibly partial) and the issues.
func loadDefinition(data []byte) (*Definition, []contracts.Issue) {
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	trimmed := bytes.TrimSpace(data)
	var root any
	switch {
	case len(trimmed) == 0:
		root = map[string]any{}
	case trimmed[0] == '{' || trimmed[0] == '[':
		v, err := decodeJSON(data)
		if err != nil {
			return &Definition{}, []contracts.Issue{{Path: []any{}, Code: issueInvalidValue, Message: "invalid JSON: " + err.Error()}}
		}
		root = v
	default:
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return &Definition{}, []contracts.Issue{{Path: []any{}, Code: issueInvalidValue, Message: "invalid YAML: " + yamlMessage(err)}}
		}
		if v == nil { // a document with only comments
			v = map[string]any{}
		}
		r := &defReader{}
		root = r.normalizeYAML(v, []any{})
		if len(r.issues) > 0 {
			sortIssues(r.issues)
			return &Definition{}, r.issues
		}
	}

	r := &defReader{}
	d, opts := r.definition(root)
	issues := append([]contracts.Issue(nil), r.issues...)
	for _, is := range d.issues(opts) {
		if !coveredPath(r.issues, is.Path) {
			issues = append(issues, is)
		}
	}
	sortIssues(issues)
	return d, issues
}

// coveredPath reports whether an issue was already reported at path or at one of its prefixes: the
// graph checks then only see a placeholder value and would report a consequence.
func coveredPath(issues []contracts.Issue, path []any) bool {
	for _, is := range issues {
		if len(is.Path) <= len(path) && comparePaths(is.Path, path[:len(is.Path)]) == 0 {
			return true
		}
	}
	return false
}

var yamlPosition = regexp.MustCompile(`(?s)^\[(\d+):(\d+)\]\s*(.*)$`)

func yamlMessage(err error) string {
	msg := strings.TrimSpace(yaml.FormatError(err, false, false))
	if m := yamlPosition.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("line %s, column %s: %s", m[1], m[2], m[3])
	}
	return msg
}

// maxJSONDepth bounds the nesting of JSON documents.
const maxJSONDepth = 1000

// decodeJSON decodes one JSON value (numbers as json.Number), rejecting duplicate keys and
// trailing content. Errors give the line and column.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	fail := func(err error) error {
		off := dec.InputOffset()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			off, err = int64(len(data)), errors.New("unexpected end of input")
		}
		line, col := lineColumn(data, off)
		return fmt.Errorf("line %d, column %d: %v", line, col, err)
	}
	var value func(depth int) (any, error)
	value = func(depth int) (any, error) {
		if depth > maxJSONDepth {
			return nil, fail(fmt.Errorf("nesting deeper than %d levels", maxJSONDepth))
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '[' {
				list := []any{}
				for dec.More() {
					v, err := value(depth + 1)
					if err != nil {
						return nil, err
					}
					list = append(list, v)
				}
				if _, err := dec.Token(); err != nil {
					return nil, fail(err)
				}
				return list, nil
			}
			obj := map[string]any{}
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return nil, fail(err)
				}
				key, _ := tok.(string)
				if _, dup := obj[key]; dup {
					return nil, fail(fmt.Errorf("duplicate key %q", key))
				}
				v, err := value(depth + 1)
				if err != nil {
					return nil, err
				}
				obj[key] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, fail(err)
			}
			return obj, nil
		default:
			return t, nil
		}
	}
	v, err := value(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("unexpected content after the JSON value")
		}
		return nil, fail(err)
	}
	return v, nil
}

// lineColumn converts a byte offset into a 1-based line and column.
func lineColumn(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// defReader walks a decoded document (map[string]any, []any, string, bool, nil, json.Number) and
// collects issues.
type defReader struct {
	issues []contracts.Issue
}

func (r *defReader) add(path []any, code, format string, args ...any) {
	r.issues = append(r.issues, contracts.Issue{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
}

// pathAt returns a new path: path followed by more.
func pathAt(path []any, more ...any) []any {
	out := make([]any, 0, len(path)+len(more))
	return append(append(out, path...), more...)
}

// normalizeYAML converts a value decoded by go-yaml into the JSON tree (numbers as json.Number).
func (r *defReader) normalizeYAML(v any, path []any) any {
	switch t := v.(type) {
	case nil, string, bool:
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = r.normalizeYAML(x, pathAt(path, k))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = r.normalizeYAML(x, pathAt(path, i))
		}
		return out
	case int:
		return json.Number(strconv.FormatInt(int64(t), 10))
	case int64:
		return json.Number(strconv.FormatInt(t, 10))
	case uint64:
		return json.Number(strconv.FormatUint(t, 10))
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			r.add(path, issueInvalidValue, "numbers must be finite, got %v", t)
			return nil
		}
		return json.Number(strconv.FormatFloat(t, 'g', -1, 64))
	}
	r.add(path, issueInvalidType, "unsupported YAML value of type %T: use a string, number, boolean, null, list or mapping", v)
	return nil
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// object returns v as an object, reporting a wrong type and every key not in allowed.
func (r *defReader) object(v any, path []any, what string, allowed ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		r.add(path, issueInvalidType, "%s must be an object, got %s", what, jsonTypeName(v))
		return nil, false
	}
	var unknown []string
	for k := range m {
		found := false
		for _, a := range allowed {
			if k == a {
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		r.add(pathAt(path, k), issueUnrecognizedKeys, "unknown key %q in %s: allowed keys are %s", k, what, strings.Join(allowed, ", "))
	}
	return m, true
}

// str reads a string field; a missing field is reported with the message required unless it
// is empty (optional field).
func (r *defReader) str(m map[string]any, key string, path []any, required string) string {
	v, ok := m[key]
	if !ok {
		if required != "" {
			r.add(pathAt(path, key), issueRequired, "%s", required)
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		hint := ""
		if _, num := v.(json.Number); num {
			hint = " (quote it)"
		}
		r.add(pathAt(path, key), issueInvalidType, "%s must be a string%s, got %s", key, hint, jsonTypeName(v))
	}
	return s
}

// boolean reads an optional boolean field (false when absent or invalid).
func (r *defReader) boolean(m map[string]any, key string, path []any) bool {
	v, present := m[key]
	if !present {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		r.add(pathAt(path, key), issueInvalidType, "%s must be true or false, got %s", key, describeValue(v))
	}
	return b
}

// integer reads an optional integer field; ok is false if absent or invalid.
func (r *defReader) integer(m map[string]any, key string, path []any) (int, bool) {
	v, present := m[key]
	if !present {
		return 0, false
	}
	n, isNum := v.(json.Number)
	f, err := strconv.ParseFloat(string(n), 64)
	if !isNum || err != nil || f != math.Trunc(f) {
		r.add(pathAt(path, key), issueInvalidType, "%s must be an integer, got %s", key, describeValue(v))
		return 0, false
	}
	if math.Abs(f) > 1<<53 {
		r.add(pathAt(path, key), issueInvalidValue, "%s is out of range: %s", key, n)
		return 0, false
	}
	return int(f), true
}

func describeValue(v any) string {
	if n, ok := v.(json.Number); ok {
		return string(n)
	}
	return jsonTypeName(v)
}

// plain converts a JSON tree into the values encoding/json decodes into any (float64 numbers).
func (r *defReader) plain(v any, path []any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for _, k := range sortedMapKeys(t) {
			out[k] = r.plain(t[k], pathAt(path, k))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = r.plain(x, pathAt(path, i))
		}
		return out
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			r.add(path, issueInvalidValue, "number %s is out of range", t)
			return nil
		}
		return f
	}
	return v
}

// freeMap reads an optional free-form object field (params, metadata).
func (r *defReader) freeMap(m map[string]any, key string, path []any) map[string]any {
	v, ok := m[key]
	if !ok {
		return nil
	}
	if _, ok := v.(map[string]any); !ok {
		r.add(pathAt(path, key), issueInvalidType, "%s must be an object, got %s", key, jsonTypeName(v))
		return nil
	}
	return r.plain(v, pathAt(path, key)).(map[string]any)
}

// budget reads the agent's shared budget (Definition.Budget).
func (r *defReader) budget(m map[string]any) *contracts.ScopeBudget {
	v, ok := m["budget"]
	if !ok {
		return nil
	}
	bm, ok := r.object(v, []any{"budget"}, "budget", "maxTokens", "maxCost", "period", "batchTokens", "batchCost", "onBudgetExhausted", "budgetWarnAt", "askAtWarn")
	if !ok {
		return nil
	}
	raw, err := json.Marshal(r.plain(bm, []any{"budget"}))
	var b contracts.ScopeBudget
	if err == nil {
		err = json.Unmarshal(raw, &b)
	}
	if err == nil {
		err = b.Validate()
	}
	if err != nil {
		msg := err.Error()
		if ke := (*contracts.Error)(nil); errors.As(err, &ke) {
			msg = ke.Message
		}
		r.add([]any{"budget"}, issueInvalidValue, "%s", msg)
		return nil
	}
	return &b
}

func (r *defReader) schema(m map[string]any, key string) *contracts.Schema {
	v, ok := m[key]
	if !ok {
		return nil
	}
	path := []any{key}
	if _, ok := v.(map[string]any); !ok {
		r.add(path, issueInvalidType, "%s must be a JSON Schema object, got %s", key, jsonTypeName(v))
		return nil
	}
	doc, err := json.Marshal(v)
	if err != nil {
		r.add(path, issueInvalidSchema, "%s cannot be encoded as JSON: %v", key, err)
		return nil
	}
	s, err := contracts.CompileSchema(doc)
	if err != nil {
		msg := err.Error()
		var ke *contracts.Error
		if errors.As(err, &ke) {
			msg = ke.Message
		}
		msg = lineBreaksRE.ReplaceAllString(msg, " ")
		r.add(path, issueInvalidSchema, "%s is not a usable JSON Schema: %s", key, msg)
		return nil
	}
	return s
}

func (r *defReader) definition(root any) (*Definition, checkOptions) {
	d := &Definition{}
	opts := checkOptions{edgeIndex: []int{}}
	m, ok := r.object(root, []any{}, "a workflow definition",
		"id", "version", "description", "inputSchema", "outputSchema", "nodes", "edges", "metadata", "fastPath", "budget")
	if !ok {
		opts.nodesUnknown, opts.edgesPartial = true, true
		return d, opts
	}
	d.ID = r.str(m, "id", nil, "id is required: name the workflow")
	d.Version = r.str(m, "version", nil, `version is required: for example "1.0.0"`)
	d.Description = r.str(m, "description", nil, "")
	d.InputSchema = r.schema(m, "inputSchema")
	d.OutputSchema = r.schema(m, "outputSchema")
	d.Metadata = r.freeMap(m, "metadata", nil)
	d.FastPath = r.boolean(m, "fastPath", nil)
	d.Budget = r.budget(m)

	if v, present := m["nodes"]; !present {
		r.add([]any{"nodes"}, issueRequired, "nodes is required: map node ids to nodes")
		opts.nodesUnknown = true
	} else if nodes, ok := v.(map[string]any); !ok {
		r.add([]any{"nodes"}, issueInvalidType, "nodes must be an object mapping node ids to nodes, got %s", jsonTypeName(v))
		opts.nodesUnknown = true
	} else {
		d.Nodes = make(map[string]Node, len(nodes))
		for _, id := range sortedMapKeys(nodes) {
			d.Nodes[id] = r.node(id, nodes[id])
		}
	}

	if v, present := m["edges"]; !present {
		r.add([]any{"edges"}, issueRequired, "edges is required: list [from, to] pairs, starting with [%s, <first node>]", Start)
		opts.edgesPartial = true
	} else if edges, ok := v.([]any); !ok {
		r.add([]any{"edges"}, issueInvalidType, "edges must be a list of [from, to] or [from, to, {when: condition}], got %s", jsonTypeName(v))
		opts.edgesPartial = true
	} else {
		d.Edges = make([]Edge, 0, len(edges))
		for i, ev := range edges {
			before := len(r.issues)
			e := r.edge(i, ev)
			if len(r.issues) > before {
				opts.edgesPartial = true
				continue
			}
			d.Edges = append(d.Edges, e)
			opts.edgeIndex = append(opts.edgeIndex, i)
		}
	}
	return d, opts
}

var lineBreaksRE = regexp.MustCompile(`\s*\n\s*`)

var onErrorModes = []string{"emit-and-stop", "silent", "emit-and-continue", "rethrow"}

func (r *defReader) node(id string, v any) Node {
	var n Node
	path := []any{"nodes", id}
	what := fmt.Sprintf("node %q", id)
	m, ok := r.object(v, path, what, "run", "params", "metadata", "children", "behavior")
	if !ok {
		return n
	}
	n.RunName = r.str(m, "run", path, "run is required: name a node function registered with RegisterNode")
	n.Params = r.freeMap(m, "params", path)
	n.Metadata = r.freeMap(m, "metadata", path)
	if cv, present := m["children"]; present {
		cpath := pathAt(path, "children")
		if list, ok := cv.([]any); !ok {
			r.add(cpath, issueInvalidType, "children of %s must be a list of workflow ids, got %s", what, jsonTypeName(cv))
		} else {
			n.Children = make([]string, 0, len(list))
			for i, x := range list {
				s, ok := x.(string)
				if !ok {
					r.add(pathAt(cpath, i), issueInvalidType, "a child of %s must be a workflow id string, got %s", what, jsonTypeName(x))
				}
				n.Children = append(n.Children, s) // "" for a wrong type: its issue is reported here
			}
		}
	}
	bv, ok := m["behavior"]
	if !ok {
		return n
	}
	bpath := pathAt(path, "behavior")
	b, ok := r.object(bv, bpath, "the behavior of "+what, "retry", "onError")
	if !ok {
		return n
	}
	if rv, ok := b["retry"]; ok {
		rpath := pathAt(bpath, "retry")
		if rm, ok := r.object(rv, rpath, "the retry of "+what, "maxAttempts", "delayMs"); ok {
			n.Retry = &Retry{MaxAttempts: 1}
			if v, ok := r.integer(rm, "maxAttempts", rpath); ok {
				n.Retry.MaxAttempts = v
			}
			if v, ok := r.integer(rm, "delayMs", rpath); ok {
				n.Retry.DelayMs = v
			}
		}
	}
	if ov, ok := b["onError"]; ok { // validated, then ignored
		opath := pathAt(bpath, "onError")
		if om, ok := r.object(ov, opath, "the onError of "+what, "mode"); ok {
			if _, present := om["mode"]; present {
				mode := r.str(om, "mode", opath, "")
				if _, isString := om["mode"].(string); isString && !containsString(onErrorModes, mode) {
					r.add(pathAt(opath, "mode"), issueInvalidValue, "mode %q is not one of %s", mode, strings.Join(onErrorModes, ", "))
				}
			}
		}
	}
	return n
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *defReader) edge(i int, v any) Edge {
	var e Edge
	path := []any{"edges", i}
	t, ok := v.([]any)
	if !ok {
		r.add(path, issueInvalidType, "an edge must be a list [from, to] or [from, to, {when: condition}], got %s", jsonTypeName(v))
		return e
	}
	if len(t) < 2 || len(t) > 3 {
		r.add(path, issueInvalidValue, "an edge is [from, to] or [from, to, {when: condition}], got %d element(s)", len(t))
		return e
	}
	endpoint := func(j int, name string) string {
		s, ok := t[j].(string)
		if !ok {
			r.add(pathAt(path, j), issueInvalidType, "the %s of an edge must be a node id string, got %s", name, jsonTypeName(t[j]))
		}
		return s
	}
	e.From = endpoint(0, "source")
	e.To = endpoint(1, "target")
	if len(t) == 3 {
		cpath := pathAt(path, 2)
		cm, ok := r.object(t[2], cpath, "an edge condition", "when")
		if !ok {
			return e
		}
		wv, present := cm["when"]
		switch w, isString := wv.(string); {
		case !present:
			r.add(pathAt(cpath, "when"), issueRequired, "when is required in an edge condition (drop the third element for a plain edge)")
		case !isString:
			r.add(pathAt(cpath, "when"), issueInvalidType, "when must be a string (quote numbers and booleans), got %s", jsonTypeName(wv))
		case w == "":
			r.add(pathAt(cpath, "when"), issueInvalidValue, "when must not be empty (drop the third element for a plain edge)")
		default:
			e.When = w
		}
	}
	return e
}
