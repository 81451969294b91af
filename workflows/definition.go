package workflows

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
)

// Issue codes of definition validation (the Code of a [contracts.Issue] inside an
// INVALID_DEFINITION error).
const (
	issueUnrecognizedKeys    = "unrecognized_keys"     // a key that the format does not define
	issueInvalidType         = "invalid_type"          // a value of the wrong JSON type
	issueRequired            = "required"              // a missing or empty required value
	issueInvalidValue        = "invalid_value"         // a value of the right type that is not allowed
	issueUnknownNode         = "unknown_node"          // an edge endpoint that names no node
	issueUnreachableNode     = "unreachable_node"      // a node no path from __start__ leads to
	issueParallelEdges       = "parallel_edges"        // edges that would run in parallel or route ambiguously
	issueDuplicateEdge       = "duplicate_edge"        // an edge identical to an earlier one
	issueUnknownNodeFunction = "unknown_node_function" // a "run" name not registered on the Registry
	issueInvalidSchema       = "invalid_schema"        // an inputSchema or outputSchema that does not compile
	issueUnknownTool         = "unknown_tool"          // a kortyx.reason tool the worker does not have (Registry.SetToolNames)
)

// nodeIDPattern is what a node id must look like: letters, digits and "_", then also ".", ":"
// and "-". It keeps ids usable in logs, paths and keys; "__start__" and "__end__" are reserved.
var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:-]*$`)

// Validate checks a definition built in Go (definitions returned by [Load] are already checked)
// and returns nil or a *[contracts.Error] with code INVALID_DEFINITION whose Issues list every
// problem, sorted by path:
//
//   - ID and Version are required;
//   - there is at least one node; node ids match ^[A-Za-z0-9_][A-Za-z0-9_.:-]*$ and are not
//     [Start] or [End];
//   - every node has exactly one of Run and RunName (whether RunName is registered is checked
//     by [Registry.Add]); a Retry has MaxAttempts >= 1 and DelayMs >= 0;
//   - edges connect existing nodes, never enter __start__ nor leave __end__;
//   - exactly one edge leaves __start__, and it has no When;
//   - a node has either one plain edge, or only conditional edges with distinct When values, or
//     no outgoing edge at all (the run ends after it); anything else would run branches in
//     parallel, which is not supported; identical edges are rejected;
//   - every node is reachable from __start__. Loops, self-loops included, are allowed.
//
// Issue paths follow the YAML/JSON form of a definition, also for definitions built in Go:
// an edge is the tuple [from, to, {when}], so edges[i].From is ["edges", i, 0], edges[i].To is
// ["edges", i, 1], edges[i].When is ["edges", i, 2, "when"] and the whole edge is ["edges", i];
// a node's Run/RunName is ["nodes", id, "run"] and its Retry is ["nodes", id, "behavior", "retry"].
//
// Validate does not modify d.
func (d *Definition) Validate() error {
	if d == nil {
		return &contracts.Error{Code: contracts.CodeInvalidDefinition, Message: "workflow definition is nil"}
	}
	return invalidError(d.ID, d.issues(checkOptions{}))
}

// startNode returns the target of the edge out of [Start], or [End]
// if there is none (never the case for a valid definition). It is deterministic and scans Edges
// (no map iteration), so it is safe in workflow code.
func (d *Definition) startNode() string {
	for _, e := range d.Edges {
		if e.From == Start {
			return e.To
		}
	}
	return End
}

// next returns the node to run after from returned condition (the caller passes the node's
// Condition, or its Intent when Condition is empty):
//
//   - if from has conditional edges, the target of the one whose When equals condition, and
//     [End] when none matches (the run ends silently, as in Kortyx);
//   - if from has a plain edge, its target (condition is ignored);
//   - if from has no outgoing edge, [End].
//
// It is deterministic and scans Edges (no map iteration), so it is safe in workflow code.
func (d *Definition) next(from, condition string) string {
	plain, conditional := "", false
	for _, e := range d.Edges {
		if e.From != from {
			continue
		}
		if e.When == "" {
			if plain == "" {
				plain = e.To
			}
			continue
		}
		conditional = true
		if e.When == condition {
			return e.To
		}
	}
	if conditional || plain == "" {
		return End
	}
	return plain
}

// checkOptions adapts the graph checks to a definition read from a file with problems.
type checkOptions struct {
	// edgeIndex maps the index of an edge in Definition.Edges to its index in the file (edges
	// that could not be read are left out of the Definition); nil is the identity.
	edgeIndex []int
	// nodesUnknown: the nodes could not be read, so edge endpoints are not checked.
	nodesUnknown bool
	// edgesPartial: some edges could not be read, so the start edge's presence and
	// reachability are not checked (they would report consequences, not causes).
	edgesPartial bool
}

func (o checkOptions) edge(i int, rest ...any) []any {
	if o.edgeIndex != nil {
		i = o.edgeIndex[i]
	}
	return append([]any{"edges", i}, rest...)
}

// issues returns every problem of d, sorted by path.
func (d *Definition) issues(o checkOptions) []contracts.Issue {
	var out []contracts.Issue
	add := func(path []any, code, format string, args ...any) {
		out = append(out, contracts.Issue{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
	}

	if d.Budget != nil {
		if err := d.Budget.Validate(); err != nil {
			var ke *contracts.Error
			if errors.As(err, &ke) {
				add([]any{"budget"}, issueInvalidValue, "%s", ke.Message)
			}
		}
	}

	checkName := func(key, value string) {
		switch {
		case value == "":
			add([]any{key}, issueRequired, "%s is required: set a non-empty string", key)
		case strings.TrimSpace(value) == "":
			add([]any{key}, issueInvalidValue, "%s must not be blank", key)
		}
	}
	checkName("id", d.ID)
	checkName("version", d.Version)

	ids := sortedMapKeys(d.Nodes)
	if len(ids) == 0 && !o.nodesUnknown {
		add([]any{"nodes"}, issueRequired, "a workflow needs at least one node")
	}
	for _, id := range ids {
		n := d.Nodes[id]
		switch {
		case id == Start || id == End:
			add([]any{"nodes", id}, issueInvalidValue,
				"node id %q is reserved for the graph's entry and exit: rename the node", id)
		case !nodeIDPattern.MatchString(id):
			add([]any{"nodes", id}, issueInvalidValue,
				"node id %q is not allowed: use letters, digits and _ (then also . : -)", id)
		}
		switch {
		case n.Run == nil && n.RunName == "":
			add([]any{"nodes", id, "run"}, issueRequired,
				"node %q has nothing to run: set Run, or RunName (\"run\" in files) to a registered node function", id)
		case n.Run != nil && n.RunName != "":
			add([]any{"nodes", id, "run"}, issueInvalidValue,
				"node %q sets both Run and RunName (%q): keep only one", id, n.RunName)
		}
		if r := n.Retry; r != nil {
			if r.MaxAttempts < 1 {
				add([]any{"nodes", id, "behavior", "retry", "maxAttempts"}, issueInvalidValue,
					"maxAttempts of node %q is %d: it must be at least 1 (the total number of attempts; 1 means no retry)",
					id, r.MaxAttempts)
			}
			if r.DelayMs < 0 {
				add([]any{"nodes", id, "behavior", "retry", "delayMs"}, issueInvalidValue,
					"delayMs of node %q is %d: it must be 0 or more", id, r.DelayMs)
			}
		}
		for i, c := range n.Children { // a workflow id, checked as the definition's own
			if strings.TrimSpace(c) == "" {
				add([]any{"nodes", id, "children", i}, issueInvalidValue,
					"child %d of node %q is blank: name the workflow id the node starts", i, id)
			}
		}
	}

	known := func(id string) bool { _, ok := d.Nodes[id]; return ok }
	knownList := strings.Join(ids, ", ")
	if knownList == "" {
		knownList = "none"
	}

	type source struct {
		plain       []int          // indexes of plain edges
		conditional []int          // indexes of conditional edges
		when        map[string]int // When → first edge index
	}
	sources := map[string]*source{}
	var sourceOrder []string
	seen := map[Edge]int{}
	for i, e := range d.Edges {
		switch {
		case e.From == "":
			add(o.edge(i, 0), issueRequired, "edge has no source node: name the node it leaves")
		case e.From == End:
			add(o.edge(i, 0), issueInvalidValue, "no edge may leave %s", End)
		case e.From != Start && !o.nodesUnknown && !known(e.From):
			add(o.edge(i, 0), issueUnknownNode, "edge leaves unknown node %q (nodes: %s)", e.From, knownList)
		}
		switch {
		case e.To == "":
			add(o.edge(i, 1), issueRequired, "edge has no target node: name the node it leads to, or %s", End)
		case e.To == Start:
			add(o.edge(i, 1), issueInvalidValue, "no edge may enter %s", Start)
		case e.To != End && !o.nodesUnknown && !known(e.To):
			add(o.edge(i, 1), issueUnknownNode, "edge enters unknown node %q (nodes: %s)", e.To, knownList)
		}
		if j, dup := seen[e]; dup {
			add(o.edge(i), issueDuplicateEdge, "edge repeats edges[%d]: remove it", o.edge(j)[1])
			continue
		}
		seen[e] = i
		if e.From == "" {
			continue
		}
		s := sources[e.From]
		if s == nil {
			s = &source{when: map[string]int{}}
			sources[e.From] = s
			sourceOrder = append(sourceOrder, e.From)
		}
		if e.When == "" {
			s.plain = append(s.plain, i)
			continue
		}
		if e.From == Start {
			add(o.edge(i, 2, "when"), issueInvalidValue,
				"the edge out of %s must be unconditional: remove when %q", Start, e.When)
		}
		if j, dup := s.when[e.When]; dup {
			add(o.edge(i, 2, "when"), issueParallelEdges,
				"node %q already has an edge for when %q (edges[%d]): one condition leads to one node only; parallel edges are unsupported",
				e.From, e.When, o.edge(j)[1])
			continue
		}
		s.when[e.When] = i
		s.conditional = append(s.conditional, i)
	}

	for _, from := range sourceOrder {
		s := sources[from]
		if from == Start {
			all := append(append([]int{}, s.plain...), s.conditional...)
			sort.Ints(all)
			for _, i := range all[1:] {
				add(o.edge(i), issueParallelEdges,
					"%s must have exactly one edge (edges[%d] is the first): remove this one; parallel edges are unsupported",
					Start, o.edge(all[0])[1])
			}
			continue
		}
		for _, i := range s.plain[min(1, len(s.plain)):] {
			add(o.edge(i), issueParallelEdges,
				"node %q has more than one plain edge (edges[%d] and this one) and parallel edges are unsupported: keep one, or put when on each",
				from, o.edge(s.plain[0])[1])
		}
		if len(s.plain) > 0 && len(s.conditional) > 0 {
			add(o.edge(s.plain[0]), issueParallelEdges,
				"node %q has both this plain edge and conditional edges; a plain edge would be taken together with them and parallel edges are unsupported: put when on every edge, or use a single plain edge",
				from)
		}
	}

	if _, ok := sources[Start]; !ok && !o.edgesPartial {
		add([]any{"edges"}, issueRequired, "no edge leaves %s: add [%s, <first node>]", Start, Start)
	}

	if !o.edgesPartial && !o.nodesUnknown && len(ids) > 0 {
		reached := map[string]bool{Start: true}
		queue := []string{Start}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			for _, e := range d.Edges {
				if e.From == cur && !reached[e.To] && known(e.To) {
					reached[e.To] = true
					queue = append(queue, e.To)
				}
			}
		}
		for _, id := range ids {
			if !reached[id] {
				add([]any{"nodes", id}, issueUnreachableNode,
					"node %q cannot be reached from %s: add an edge into it or remove it", id, Start)
			}
		}
	}

	sortIssues(out)
	return out
}

// invalidError wraps issues into an INVALID_DEFINITION error, or returns nil if there are none.
func invalidError(id string, issues []contracts.Issue) error {
	if len(issues) == 0 {
		return nil
	}
	what := "workflow definition"
	if id != "" {
		what = fmt.Sprintf("workflow %q", id)
	}
	noun := "problem"
	if len(issues) > 1 {
		noun = "problems"
	}
	return &contracts.Error{
		Code:    contracts.CodeInvalidDefinition,
		Message: fmt.Sprintf("%s is invalid: %d %s to fix", what, len(issues), noun),
		Issues:  issues,
	}
}

// sortIssues orders issues by path (keys lexically, indexes numerically, indexes before keys),
// keeping the order of issues with equal paths.
func sortIssues(issues []contracts.Issue) {
	sort.SliceStable(issues, func(a, b int) bool { return comparePaths(issues[a].Path, issues[b].Path) < 0 })
}

func comparePaths(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareSegments(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func compareSegments(a, b any) int {
	ai, aInt := a.(int)
	bi, bInt := b.(int)
	switch {
	case aInt && bInt:
		return ai - bi
	case aInt:
		return -1
	case bInt:
		return 1
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
