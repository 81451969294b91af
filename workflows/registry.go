package workflows

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// DefaultFallback is the id of the workflow [Registry.Workflow] falls back to, as in Kortyx.
const DefaultFallback = "general-chat"

// Registry holds node functions and workflow definitions. Build it with [NewRegistry] (the zero
// value is not usable), register node functions, then add definitions; after that it is safe
// for concurrent use (lookups take a read lock).
type Registry struct {
	mu       sync.RWMutex
	nodes    map[string]NodeFunc
	params   map[string]*contracts.Schema // params schema of node functions that declare one
	binders  map[string]binder            // node kinds that bind their params at Add
	defs     map[string]*Definition
	fallback string
	limits   contracts.Limits
	pricing  *protocol.Pricing      // the worker's prices (SetPrices); nil: none
	agents   contracts.ScopeBudget  // every agent's shared budget (SetAgentBudget); zero: none
	tenants  contracts.ScopeBudget  // every tenant's (SetTenantBudget); zero: none
	tools    map[string]bool        // the worker's tool names (SetToolNames); nil: not known
	local    []string               // the worker's tools that run as local activities (SetLocalTools), sorted
	rebound  map[string]*Definition // recorded definitions rebound for runs (pin.go), by hash
}

// NewRegistry returns a registry with the built-in node kinds (see [ReasonNode]) and no
// workflows; its fallback workflow is [DefaultFallback].
func NewRegistry() *Registry {
	r := &Registry{
		nodes:    map[string]NodeFunc{},
		params:   map[string]*contracts.Schema{},
		binders:  map[string]binder{},
		defs:     map[string]*Definition{},
		fallback: DefaultFallback,
	}
	r.params[ReasonNode] = reasonParamsSchema
	r.binders[ReasonNode] = func(params map[string]any) (NodeFunc, error) { return bindReason(params, r.tools) }
	r.nodes[ReasonNode] = func(workflow.Context, NodeInput) (NodeResult, error) {
		return NodeResult{}, contracts.Errorf(contracts.CodeInvalidDefinition, "kortyx.reason runs only through a registered definition")
	}
	return r
}

// binder turns the params of a node into its node function when the definition is added.
type binder = func(params map[string]any) (NodeFunc, error)

// RegisterNodeKind registers a declarative node kind: nodes whose run is name get the node
// function bind returns for their params (validated first against paramsSchema, when given).
// bind runs when a definition is added: the place to parse params and compile schemas once,
// outside workflow code. Its error (ideally a *contracts.Error with issues whose paths are
// relative to the params) rejects the definition.
func (r *Registry) RegisterNodeKind(name string, paramsSchema *contracts.Schema, bind func(params map[string]any) (NodeFunc, error)) error {
	if bind == nil {
		return contracts.Errorf(contracts.CodeInvalidDefinition, "node kind %q needs a binder", name)
	}
	placeholder := func(workflow.Context, NodeInput) (NodeResult, error) {
		return NodeResult{}, contracts.Errorf(contracts.CodeInvalidDefinition, "node kind %q runs only through a registered definition", name)
	}
	if err := r.registerNode(name, placeholder, paramsSchema); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.binders[name] = bind
	return nil
}

// RegisterNode registers a node function under name, for nodes whose RunName ("run" in files)
// is name. An empty name, a nil fn or an already registered name is an INVALID_DEFINITION error.
// To have [Registry.Add] validate the params of the nodes that run it, register a node kind
// ([Registry.RegisterNodeKind]) whose binder returns fn.
func (r *Registry) RegisterNode(name string, fn NodeFunc) error {
	return r.registerNode(name, fn, nil)
}

// registerNode registers fn under name; params, when not nil, validates the params of the
// nodes that run it.
func (r *Registry) registerNode(name string, fn NodeFunc, params *contracts.Schema) error {
	switch {
	case strings.TrimSpace(name) == "":
		return contracts.Errorf(contracts.CodeInvalidDefinition, "node function name is empty: give it a name")
	case fn == nil:
		return contracts.Errorf(contracts.CodeInvalidDefinition, "node function %q is nil", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.nodes[name]; dup {
		return contracts.Errorf(contracts.CodeInvalidDefinition, "node function %q is already registered: use another name", name)
	}
	r.nodes[name] = fn
	if params != nil {
		r.params[name] = params
	}
	return nil
}

// Add validates definitions (see [Definition.Validate]), resolves the RunName of every node
// against the registered node functions, and registers them. It is all-or-nothing: on any
// error nothing is added, and the error lists the problems of every definition (one
// *[contracts.Error] with code INVALID_DEFINITION, or several joined with errors.Join). An
// unknown RunName is an issue at ["nodes", id, "run"] with code unknown_node_function; an id
// that is already registered (or repeated in defs) is an error too.
//
// Add registers a copy of each definition in which every node has Run set (and RunName
// cleared), so the executor only uses Run; the caller's definition is not modified. Params,
// Metadata and schemas are shared with the caller's definition: do not mutate a definition
// after adding it.
func (r *Registry) Add(defs ...*Definition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	resolved, err := r.prepare(defs)
	if err != nil {
		return err
	}
	for _, d := range resolved {
		r.defs[d.ID] = d
	}
	return nil
}

// SetToolNames tells the registry the names of the worker's tools (for example
// tools.Set.Names, MCP tools listed at start included), so that [Registry.Add] refuses a
// [ReasonNode] whose tools param names another one (issue code unknown_tool at
// ["nodes", id, "params", "tools", i]). Without it, tool names are not checked when a workflow
// is added. Call it before adding definitions: those already added are not checked again.
func (r *Registry) SetToolNames(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools = make(map[string]bool, len(names))
	for _, n := range names {
		r.tools[n] = true
	}
}

// SetLocalTools tells the registry which of the worker's tools run as Temporal local
// activities (tools.Set.LocalNames: the tools marked tools.Local); the others run as regular
// activities. A run records the set it sees at its first tool call (one marker in its history)
// and keeps it to its end, so a run that waits across a deploy that changes the set keeps
// running each tool the way it started; continue-as-new and new runs take the set of the worker
// they run on.
func (r *Registry) SetLocalTools(names ...string) {
	local := append([]string(nil), names...)
	sort.Strings(local)
	local = slices.Compact(local)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.local = local
}

// LocalTools returns the names given to [Registry.SetLocalTools], sorted.
func (r *Registry) localTools() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.local...)
}

// prepare checks and resolves defs; r.mu must be held.
func (r *Registry) prepare(defs []*Definition) ([]*Definition, error) {
	var errs []error
	out := make([]*Definition, 0, len(defs))
	ids := map[string]bool{}
	for _, d := range defs {
		if d == nil {
			errs = append(errs, contracts.Errorf(contracts.CodeInvalidDefinition, "workflow definition is nil"))
			continue
		}
		issues := d.issues(checkOptions{})
		if p := agentTypeProblem(d.ID); p != "" && strings.TrimSpace(d.ID) != "" {
			issues = append(issues, contracts.Issue{Path: []any{"id"}, Code: issueInvalidValue, Message: p})
		}
		nodeIssues, bound := r.checkNodes(d)
		issues = append(issues, nodeIssues...)
		sortIssues(issues)
		if err := invalidError(d.ID, issues); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := r.defs[d.ID]; dup || ids[d.ID] {
			errs = append(errs, &contracts.Error{Code: contracts.CodeInvalidDefinition,
				Message: fmt.Sprintf("workflow %q is already registered: workflow ids must be unique", d.ID),
				Details: map[string]any{"workflow": d.ID}})
			continue
		}
		ids[d.ID] = true
		out = append(out, r.resolve(d, bound))
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// checkNodes checks the nodes of d against the registry (node functions, params schemas,
// binders) and binds the declarative ones; r.mu must be held.
func (r *Registry) checkNodes(d *Definition) ([]contracts.Issue, map[string]NodeFunc) {
	var issues []contracts.Issue
	bound := map[string]NodeFunc{}
	for _, id := range sortedMapKeys(d.Nodes) {
		n := d.Nodes[id]
		if n.Run != nil || n.RunName == "" {
			continue
		}
		params := n.Params
		if params == nil {
			params = map[string]any{}
		}
		var schemaIssues []contracts.Issue
		if schema := r.params[n.RunName]; schema != nil {
			for _, is := range schema.Validate(params) {
				is.Path = append([]any{"nodes", id, "params"}, is.Path...)
				is.Message = fmt.Sprintf("params of %s: %s", n.RunName, is.Message)
				schemaIssues = append(schemaIssues, is)
			}
		}
		issues = append(issues, schemaIssues...)
		bind := r.binders[n.RunName]
		switch {
		case bind == nil:
		case len(schemaIssues) == 0:
			fn, err := bind(params)
			if err != nil {
				issues = append(issues, bindIssues(id, n.RunName, err)...)
			} else {
				bound[id] = fn
			}
		case n.RunName == ReasonNode:
			// Report the semantic problems of the valid params too, so that one round of fixes
			// suffices: bind the params without the keys the schema refused, and keep the issues
			// that are not at (or under) a path already reported. Other binders only ever see
			// valid params.
			const depth = 3             // "nodes", id, "params"
			var keyed []contracts.Issue // issues inside a param (not about the params object itself)
			for _, is := range schemaIssues {
				if len(is.Path) > depth {
					keyed = append(keyed, is)
				}
			}
			_, err := bind(withoutIssueKeys(params, keyed, depth))
			var ke *contracts.Error
			if err != nil && errors.As(err, &ke) && len(ke.Issues) > 0 {
				for _, is := range bindIssues(id, n.RunName, err) {
					if !coveredPath(keyed, is.Path) {
						issues = append(issues, is)
					}
				}
			}
		}
		if _, ok := r.nodes[n.RunName]; !ok {
			issues = append(issues, contracts.Issue{Path: []any{"nodes", id, "run"}, Code: issueUnknownNodeFunction,
				Message: fmt.Sprintf("node function %q is not registered (registered: %s): register it with RegisterNode or fix the name",
					n.RunName, r.nodeList())})
		}
	}
	return issues, bound
}

// withoutIssueKeys returns params without the top-level keys that issues (paths under the
// params, which start after prefix segments) point into.
func withoutIssueKeys(params map[string]any, issues []contracts.Issue, prefix int) map[string]any {
	out := make(map[string]any, len(params))
	for k, v := range params {
		out[k] = v
	}
	for _, is := range issues {
		if len(is.Path) > prefix {
			if k, ok := is.Path[prefix].(string); ok {
				delete(out, k)
			}
		}
	}
	return out
}

// resolve returns a copy of a valid definition with every node's Run set; r.mu must be held.
func (r *Registry) resolve(d *Definition, bound map[string]NodeFunc) *Definition {
	c := *d
	c.Nodes = make(map[string]Node, len(d.Nodes))
	for id, n := range d.Nodes {
		if fn := bound[id]; fn != nil {
			n.Run = fn
			n.RunName = ""
		}
		if n.Run == nil {
			n.Run = r.nodes[n.RunName]
			n.RunName = ""
		}
		if n.Retry != nil {
			retry := *n.Retry
			n.Retry = &retry
		}
		c.Nodes[id] = n
	}
	c.Edges = append([]Edge(nil), d.Edges...)
	c.pin = pinOf(d)
	return &c
}

// nodeList renders the registered node function names; r.mu must be held.
func (r *Registry) nodeList() string {
	if len(r.nodes) == 0 {
		return "none"
	}
	return strings.Join(sortedMapKeys(r.nodes), ", ")
}

// AddFile loads a workflow file as [Load] does (its error starts with the path, also in Details["file"]) and adds it with [Registry.Add]. A file
// with problems gets one error that lists all of them with their paths: those of the format
// and those found against this registry (node functions, params), so that one round of fixes
// suffices.
func (r *Registry) AddFile(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, err := r.loadFile(path)
	if err != nil {
		return err
	}
	resolved, err := r.prepare([]*Definition{d})
	if err != nil {
		return err
	}
	r.defs[resolved[0].ID] = resolved[0]
	return nil
}

// loadFile loads a workflow file and checks its nodes against the registry: one error, naming
// the file, lists the problems of both. r.mu must be held.
func (r *Registry) loadFile(path string) (*Definition, error) {
	data, err := readWorkflowFile(path)
	if err != nil {
		return nil, err
	}
	d, issues := loadDefinition(data)
	more, _ := r.checkNodes(d)
	for _, is := range more {
		if !coveredPath(issues, is.Path) {
			issues = append(issues, is)
		}
	}
	if len(issues) == 0 {
		return d, nil
	}
	sortIssues(issues)
	return nil, inFile(path, invalidError(d.ID, issues))
}

// AddDir loads the workflow files of a directory (not its subdirectories) whose names end in
// ".workflow.json", ".workflow.yaml" or ".workflow.yml", in name order, and adds their
// definitions with [Registry.Add], reporting the problems of each file as [Registry.AddFile] does. It is
// all-or-nothing: if any file fails to load or any definition fails to add, nothing is added
// and the errors of all files are returned, joined.
func (r *Registry) AddDir(dir string) error {
	paths, err := workflowFiles(dir)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var defs []*Definition
	var errs []error
	for _, path := range paths {
		d, err := r.loadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		defs = append(defs, d)
	}
	resolved, addErr := r.prepare(defs)
	if err := errors.Join(errors.Join(errs...), addErr); err != nil {
		return err
	}
	for _, d := range resolved {
		r.defs[d.ID] = d
	}
	return nil
}

// SetLimits sets the default execution limits of the runs of this registry's workflows
// (spec F5.7; RunInput.Limits overrides them per run). Zero fields mean no limit. Its budget
// (MaxTokens, MaxCost and their settings) is recorded by each run at its start, so that a
// worker restarted with another default replays the runs it started as they ran; the other
// limits apply as the worker has them.
func (r *Registry) SetLimits(l contracts.Limits) error {
	if err := protocol.CheckLimits(l); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limits = l
	return nil
}

// SetPrices sets the worker's price table ([contracts.Price] by "provider:model", per million
// tokens, in currency), and the default model a pass that names none calls (its provider and
// model, as the model activity's configuration has them). A run with a money budget
// (Limits.MaxCost) prices its passes with the table it recorded at its start; a pass of a
// model the table lacks fails with PRICE_MISSING.
func (r *Registry) SetPrices(prices map[string]contracts.Price, defaultProvider, defaultModel, currency string) error {
	for key, p := range prices {
		if !strings.Contains(key, ":") || strings.HasPrefix(key, ":") || strings.HasSuffix(key, ":") {
			return contracts.Errorf(contracts.CodeInvalidInput, "the price table's key %q must be \"provider:model\"", key)
		}
		for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return contracts.Errorf(contracts.CodeInvalidInput, "the price of %q must be positive numbers per million tokens", key)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(prices) == 0 {
		r.pricing = nil
		return nil
	}
	r.pricing = &protocol.Pricing{Prices: maps.Clone(prices), DefaultProvider: defaultProvider, DefaultModel: defaultModel, Currency: currency}
	return nil
}

// pricingOf returns the worker's prices (nil: none).
func (r *Registry) pricingOf() *protocol.Pricing {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.pricing
}

// SetAgentBudget gives every agent of the worker a shared budget of its own (docs/budgets.md):
// the model passes of all runs of one agent (the runs it is the root of, with their children)
// together, kept by a ledger workflow per agent (and per period). An agent's own
// [Definition].Budget overrides it. The worker program sets it from KORTYX_AGENT_MAX_TOKENS,
// KORTYX_AGENT_MAX_COST and KORTYX_AGENT_BUDGET_PERIOD.
func (r *Registry) SetAgentBudget(b contracts.ScopeBudget) error {
	if err := b.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agents = b
	return nil
}

// SetTenantBudget gives every tenant a shared budget of its own (docs/budgets.md): the model
// passes of all runs of one tenant together ([contracts.RunInput].Tenant; a session's runs are
// its owner's, the identity the wires' Owner hook gives). Runs without a tenant are not under
// it. The worker program sets it from KORTYX_TENANT_MAX_TOKENS, KORTYX_TENANT_MAX_COST and
// KORTYX_TENANT_BUDGET_PERIOD.
func (r *Registry) SetTenantBudget(b contracts.ScopeBudget) error {
	if err := b.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tenants = b
	return nil
}

// scopeBudgets are the shared budgets a new root run of agent for tenant is under.
func (r *Registry) scopeBudgets(agent, tenant string) []protocol.LedgerConfig {
	agent = strings.TrimSpace(agent)
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []protocol.LedgerConfig
	b := r.agents
	if d := r.defs[agent]; d != nil && d.Budget != nil {
		b = *d.Budget
	}
	if b.On() && agent != "" {
		out = append(out, protocol.LedgerConfig{Scope: contracts.ScopeAgent, Key: agent, Budget: b})
	}
	if r.tenants.On() && tenant != "" {
		out = append(out, protocol.LedgerConfig{Scope: contracts.ScopeTenant, Key: tenant, Budget: r.tenants})
	}
	return out
}

// Limits returns the default execution limits.
func (r *Registry) Limits() contracts.Limits {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.limits
}

// SetFallback sets the id of the workflow [Registry.Workflow] returns for unknown ids (default
// [DefaultFallback]); the empty string disables the fallback.
func (r *Registry) SetFallback(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallback = id
}

// Lookup returns the definition registered under id, without falling back.
func (r *Registry) Lookup(id string) (*Definition, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.defs[id]
	return d, ok
}

// Workflow returns the definition registered under id or, if there is none, the fallback
// workflow. Otherwise, or if id is blank, it returns a *[contracts.Error] with code
// UNKNOWN_WORKFLOW. The definition must not be modified.
func (r *Registry) Workflow(id string) (*Definition, error) {
	if strings.TrimSpace(id) == "" {
		return nil, &contracts.Error{Code: contracts.CodeUnknownWorkflow,
			Message: "No workflow was selected: pass the id of a registered workflow."}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if d, ok := r.defs[id]; ok {
		return d, nil
	}
	if r.fallback != "" {
		if d, ok := r.defs[r.fallback]; ok {
			return d, nil
		}
	}
	// Not Kortyx's "(fallback ... missing too)": the fallback is the worker's concern; the
	// sender needs the ids it can use.
	known := sortedMapKeys(r.defs)
	msg := fmt.Sprintf("Workflow %q not found; the workflows registered on this worker are: %s.", id, strings.Join(known, ", "))
	if len(known) == 0 {
		msg = fmt.Sprintf("Workflow %q not found: no workflow is registered on this worker.", id)
	}
	return nil, &contracts.Error{Code: contracts.CodeUnknownWorkflow, Message: msg,
		Details: map[string]any{"workflow": id, "fallback": r.fallback, "known": known}}
}

// Workflows returns the registered definitions sorted by id.
func (r *Registry) Workflows() []*Definition {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Definition, 0, len(r.defs))
	for _, d := range r.defs {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Agents returns what the wires show of the registered definitions, sorted by id: it is the
// catalog of the session service (sessions.Options.Agents), read again on each call.
func (r *Registry) Agents() []contracts.Agent {
	defs := r.Workflows()
	out := make([]contracts.Agent, 0, len(defs))
	for _, d := range defs {
		out = append(out, contracts.Agent{ID: d.ID, Description: d.Description, Version: d.Version,
			InputSchema: d.InputSchema, OutputSchema: d.OutputSchema})
	}
	return out
}

// NodeNames returns the registered node function names, sorted.
func (r *Registry) nodeNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedMapKeys(r.nodes)
}

// bindIssues turns a binder error into issues under the node's params.
func bindIssues(id, kind string, err error) []contracts.Issue {
	var ke *contracts.Error
	if errors.As(err, &ke) && len(ke.Issues) > 0 {
		out := make([]contracts.Issue, len(ke.Issues))
		for i, is := range ke.Issues {
			is.Path = append([]any{"nodes", id, "params"}, is.Path...)
			out[i] = is
		}
		return out
	}
	return []contracts.Issue{{Path: []any{"nodes", id, "params"}, Code: issueInvalidValue,
		Message: fmt.Sprintf("params of %s: %v", kind, err)}}
}
