package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/workflows"
)

// graph is one agent of GET /api/workflows: its definition as the studio draws it.
type graph struct {
	ID           string            `json:"id"`
	Version      string            `json:"version"`
	Description  string            `json:"description,omitempty"`
	Fingerprint  string            `json:"fingerprint"`
	InputSchema  *contracts.Schema `json:"inputSchema,omitempty"`
	OutputSchema *contracts.Schema `json:"outputSchema,omitempty"`
	// Nodes in id order, then the entry and exit ([workflows.Start], [workflows.End]).
	Nodes []graphNode      `json:"nodes"`
	Edges []workflows.Edge `json:"edges"`
}

// graphNode is one node of a graph.
type graphNode struct {
	ID string `json:"id"`
	// Run is the registered function or node kind the node runs ("" for a Go function of the
	// definition, and for the entry and exit).
	Run    string           `json:"run,omitempty"`
	Params map[string]any   `json:"params,omitempty"`
	Retry  *workflows.Retry `json:"retry,omitempty"`
	// Version is the node's declared version, Metadata its free-form metadata, and Children
	// the workflows it declares it starts as child workflows ([workflows.Node].Children).
	Version  string         `json:"version,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Children []string       `json:"children,omitempty"`
	// Kind is "start", "end", "reason" (the built-in kortyx.reason node), "registered" (a
	// function registered by name) or "go" (a function of the definition).
	Kind string `json:"kind"`
}

// workflowsList serves GET /api/workflows: the worker's agents and their graphs, in id order
// (none without a registry).
func (o Options) workflowsList(r *http.Request) (any, error) {
	out := []graph{}
	if o.Registry == nil {
		return out, nil
	}
	for _, d := range o.Registry.Workflows() {
		g := graph{ID: d.ID, Version: d.Version, Description: d.Description, Fingerprint: o.Registry.Fingerprint(d.ID),
			InputSchema: d.InputSchema, OutputSchema: d.OutputSchema, Edges: slices.Clone(d.Edges)}
		if g.Edges == nil {
			g.Edges = []workflows.Edge{}
		}
		runs := o.Registry.NodeRuns(d.ID)
		for id, n := range d.Nodes {
			kind := "go"
			switch runs[id] {
			case "":
			case workflows.ReasonNode:
				kind = "reason"
			default:
				kind = "registered"
			}
			g.Nodes = append(g.Nodes, graphNode{ID: id, Run: runs[id], Params: n.Params, Retry: n.Retry, Kind: kind,
				Version: n.Version, Metadata: n.Metadata, Children: n.Children})
		}
		slices.SortFunc(g.Nodes, func(a, b graphNode) int { return strings.Compare(a.ID, b.ID) })
		g.Nodes = append(g.Nodes, graphNode{ID: workflows.Start, Kind: "start"}, graphNode{ID: workflows.End, Kind: "end"})
		out = append(out, g)
	}
	return out, nil
}
