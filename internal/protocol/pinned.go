package protocol

import "encoding/json"

// PinnedDefinition is the definition a run started with, recorded once in its history (a side
// effect at its first workflow task) and carried in its snapshots (continue-as-new, session
// checkpoints, rollback and fork), so that a run keeps its graph when the worker's files
// change. Hash identifies the graph: the worker compares it with its own definition's and
// rebinds the recorded one when they differ.
type PinnedDefinition struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	// Hash is the hex SHA-256 of the canonical JSON of the graph (nodes and edges, schemas).
	Hash string `json:"hash"`
	// Nodes are the graph's nodes by id, each with the hash of its own part.
	Nodes map[string]PinnedNode `json:"nodes"`
	Edges []PinnedEdge          `json:"edges"`
	// InputSchema and OutputSchema are the definition's schema documents.
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Digest is set when the definition was too large to record: only the hashes are kept
	// (node params and schemas are left out), so a changed definition is detected but cannot
	// be rebound.
	Digest bool `json:"digest,omitempty"`
	// FastPath: the definition runs its model passes as local activities
	// (workflows.Definition.FastPath).
	FastPath bool `json:"fastPath,omitempty"`
}

// PinnedNode is one node of a [PinnedDefinition].
type PinnedNode struct {
	// Run is the registered node function or node kind ("run" in files); empty for a node
	// whose Go function is set directly in a definition built in Go (Code).
	Run  string `json:"run,omitempty"`
	Code bool   `json:"code,omitempty"`
	// Version is the node's declared version (workflows.Node.Version).
	Version string         `json:"version,omitempty"`
	Params  map[string]any `json:"params,omitempty"`
	Retry   *PinnedRetry   `json:"retry,omitempty"`
	// Hash is the hex SHA-256 of the node's canonical JSON (its id and the fields above).
	Hash string `json:"hash"`
}

// PinnedRetry is a pinned node's retry behaviour.
type PinnedRetry struct {
	MaxAttempts int `json:"maxAttempts"`
	DelayMs     int `json:"delayMs,omitempty"`
}

// PinnedEdge is one edge of a [PinnedDefinition].
type PinnedEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	When string `json:"when,omitempty"`
}
