package execution

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// Interrupt contract modes.
const (
	ModeOptional = "optional"
	ModeRequired = "required"
)

// reasonSpec is a checked Reason call with its defaults filled in ([ReasonOptions.spec]).
type reasonSpec struct {
	ID       string
	Model    providers.ModelRef
	Messages []providers.Message
	Options  providers.CallOptions
	Stream   bool
	Emit     bool
	Tools    []string
	MCP      []protocol.MCPServer
	MaxSteps int
	// EmitTool and Approve say, per tool name, whether tool chunks are published and whether a
	// human approves each call first.
	EmitTool func(name string) bool
	Approve  func(name string) bool
	// MaxResultChars bounds the tool result text sent back to the model (0: no bound).
	MaxResultChars int
	ModelOptions   workflow.ActivityOptions
	ToolOptions    workflow.ActivityOptions
	// FastPath runs the model passes as local activities (ReasonOptions.FastPath, or the
	// agent's Run.FastPath).
	FastPath bool
	// ModelFailures and ToolFailures cap the own retryable failures of one model pass and of
	// one tool call (0: no cap), sent in the activity inputs.
	ModelFailures, ToolFailures int

	// Output contracts (F3.7): emitted values and the terminal return.
	EmitContracts   map[string]*contracts.OutputContract
	ReturnContracts map[string]*contracts.OutputContract
	MaxEmissions    int
	// Interrupt contracts (F3.8).
	Interrupts    map[string]*contracts.InterruptContract
	InterruptMode string
	MaxRequests   int
	// OutputSchema validates a JSON final answer.
	OutputSchema *contracts.Schema
	// SchemaCorrections is the number of repair passes for invalid output values (0: none).
	SchemaCorrections int
	// MissingReturnCorrections is the number of passes that ask for a missing return.
	MissingReturnCorrections int

	mcpTools []protocol.OfferedTool // recorded tool list of the MCP servers
}

// offered returns every business tool name the model may call.
func (spec reasonSpec) offered() []string {
	out := append([]string(nil), spec.Tools...)
	for _, t := range spec.mcpTools {
		out = append(out, t.Name)
	}
	return out
}

// mcpServer returns the MCP server of a tool, or nil for a worker tool.
func (spec reasonSpec) mcpServer(name string) *protocol.MCPServer {
	for _, t := range spec.mcpTools {
		if t.Name == name {
			srv := spec.MCP[t.Server]
			return &srv
		}
	}
	return nil
}

// Reason runs a model call with its tool loop (spec F3.5–F3.12). Every model pass and every
// tool call is an activity whose result is recorded in the journal, so a node retry (or a run
// started from a snapshot) replays recorded passes, tool results, emissions and answers without
// paying for them or publishing them again; a completed call returns its recorded result.
func (s *Scope) Reason(ctx workflow.Context, opts ReasonOptions) (ReasonResult, error) {
	spec, err := opts.spec()
	if err != nil {
		return ReasonResult{}, err
	}
	key, err := s.key(entryReason, spec.ID)
	if err != nil {
		return ReasonResult{}, err
	}
	var res ReasonResult
	if s.recorded(key, &res) {
		return res, nil
	}
	l := &loop{s: s, spec: spec, key: key, seen: map[string]bool{}}
	l.res = ReasonResult{ID: spec.ID, OpID: s.opID(ctx, key), Steps: []ReasonStep{}}
	if len(spec.MCP) > 0 {
		if l.spec.mcpTools, err = s.listTools(ctx, key, spec); err != nil {
			return ReasonResult{}, err
		}
	}
	l.msgs = append([]providers.Message(nil), spec.Messages...)
	if err := l.run(ctx); err != nil {
		return ReasonResult{}, err
	}
	s.record(key, protocol.JournalEntry{Kind: entryReason, Value: protocol.RawJSON(l.res), At: workflow.Now(ctx)})
	return l.res, nil
}

// loop is the state of one Reason call. Everything in it is derived deterministically from the
// journal and history, so replays and node retries rebuild it exactly (budgets and correction
// counters included).
type loop struct {
	s    *Scope
	spec reasonSpec
	key  string
	msgs []providers.Message
	// prefixes are the conversation prefixes the worker reported as stored (learned from
	// recorded results only), oldest first: later passes send one of them by reference.
	prefixes []storedPrefix
	res      ReasonResult
	seen     map[string]bool

	passes        int // model passes of any kind, counted against MaxSteps
	texts         []string
	emissions     int
	asked         int
	schemaFixes   int // repair passes made, against SchemaCorrections (one allowance per call)
	contractFixes int // multiple-return corrections waiting for a single return
	missingFixes  int
}

func (l *loop) hasOutputs() bool {
	return len(l.spec.EmitContracts) > 0 || len(l.spec.ReturnContracts) > 0
}

func (l *loop) run(ctx workflow.Context) error {
	returnsOnly := false // a missing-return correction pass offers only the return tools
	for {
		if l.passes >= l.spec.MaxSteps {
			return l.budgetError()
		}
		l.steer(ctx)
		in := l.passInput()
		in.ControlTools = l.controlTools(returnsOnly)
		if returnsOnly {
			in.Tools, in.MCP, in.MCPTools = nil, nil, nil
		}
		resp, err := l.pass(ctx, "", in)
		if err != nil {
			return err
		}
		step := ReasonStep{Index: len(l.res.Steps), Text: resp.Text, ToolCalls: resp.ToolCalls, Usage: resp.Usage, FinishReason: resp.FinishReason}
		if resp.Text != "" {
			l.texts = append(l.texts, resp.Text)
		}
		if len(resp.ToolCalls) == 0 {
			l.res.Steps = append(l.res.Steps, step)
			done, err := l.finish(ctx, resp)
			if err == nil && done && l.passes < l.spec.MaxSteps && l.res.Returned == nil && l.steerPending() {
				// A steering message arrived while the model answered: it answers again, with
				// its answer and the message (taken in at the top of the loop).
				l.msgs = append(l.msgs, providers.Message{Role: providers.RoleAssistant, Content: resp.Text})
				continue
			}
			if err != nil || done {
				return err
			}
			returnsOnly = true
			continue
		}
		returnsOnly = false
		calls, err := l.classify(resp.ToolCalls)
		if err != nil {
			return err
		}
		if l.passes >= l.spec.MaxSteps && returnCount(calls) != 1 {
			// No pass is left, and nothing in this turn can finish the call: the results of its
			// calls would never be read. Run none of them (no tool, emission or question).
			// Runs recorded before this rule processed turns with control calls: they keep
			// doing so on replay.
			if !l.hasControl(calls) || l.s.run.Version(ctx, versionLastPassCalls) {
				return l.lastPassError(calls)
			}
		}
		stepIdx := len(l.res.Steps)
		l.res.Steps = append(l.res.Steps, step)
		results, err := l.turn(ctx, resp, calls)
		l.res.Steps[stepIdx].ToolResults = results
		if err != nil {
			return err
		}
		if l.res.Returned != nil {
			l.res.Text = strings.Join(l.texts, "\n")
			return nil
		}
	}
}

// steer takes in, before pass l.passes, the steering messages the run received for its turn, as
// user messages; it reports whether it took any in. What it takes in is journaled, so that a node retry takes the same messages in
// at the same pass.
func (l *loop) steer(ctx workflow.Context) bool {
	key := l.key + keySteer + strconv.Itoa(l.passes)
	var taken []contracts.Steer
	if !l.s.recorded(key, &taken) {
		taken = l.s.run.TakeSteers(l.s.node, l.passes)
		if len(taken) == 0 {
			return false
		}
		l.s.record(key, protocol.JournalEntry{Kind: entrySteer, Value: protocol.RawJSON(taken), At: workflow.Now(ctx)})
	}
	for _, st := range taken {
		l.msgs = append(l.msgs, providers.Message{Role: providers.RoleUser, Content: st.Content})
	}
	return true
}

// steerPending reports whether steering messages wait to be taken in before pass l.passes
// (recorded there, or received for the run's turn).
func (l *loop) steerPending() bool {
	var taken []contracts.Steer
	return l.s.recorded(l.key+keySteer+strconv.Itoa(l.passes), &taken) || l.s.run.SteersWaiting()
}

// Change ids of workflow.GetVersion (persisted in histories: they never change).
const (
	// versionLastPassCalls: a last pass that cannot finish runs none of its calls (before, only
	// a turn of business tools alone was refused).
	versionLastPassCalls = "kortyx.reason.last-pass-calls"
	// versionReusedOutcomes: a reused call outcome restores the passes, steps and corrections
	// it spent.
	versionReusedOutcomes = "kortyx.reason.reused-outcomes"
	// versionSharedCorrections: SchemaCorrections is one allowance for the whole call (before,
	// one per value).
	versionSharedCorrections = "kortyx.reason.shared-corrections"
	// versionInvalidatePublished: an invalid streamed value is invalidated only if its pass
	// published fields.
	versionInvalidatePublished = "kortyx.reason.invalidate-published"
	// versionLocalTools: the run records which worker tools run as local activities (a side
	// effect at its first tool call); before, every tool call was a regular activity.
	versionLocalTools = "kortyx.reason.local-tools"
	// versionChunksWithPass: the chunks queued before a model pass are published by the pass
	// (ModelPassInput.Chunks); before, by a publish local activity of their own.
	versionChunksWithPass = "kortyx.reason.chunks-with-pass"
	// versionRequeueFailedPass: the chunks a failed model pass carried go back to the outbox
	// (the next flush publishes them); before, only when the pass was cancelled.
	versionRequeueFailedPass = "kortyx.reason.requeue-failed-pass"
)

// lastPassError is the error of a last pass whose calls cannot finish the call: several returns
// need a correction pass, anything else a pass that reads the results.
func (l *loop) lastPassError(calls []turnCall) error {
	if returnCount(calls) > 1 {
		return &contracts.Error{Code: contracts.CodeReasonOutputContractCorrectionExhausted,
			Message: fmt.Sprintf("hooks.Reason used its %d model passes before the model selected a single return contract; increase ToolExecution.MaxSteps.", l.spec.MaxSteps),
			Details: map[string]any{"maxSteps": l.spec.MaxSteps, "modelPasses": l.passes, "outputContractCorrections": l.contractFixes + 1}}
	}
	return &contracts.Error{Code: contracts.CodeReasonMaxSteps,
		Message: fmt.Sprintf("hooks.Reason tool loop reached maxSteps (%d) before producing a final response; increase ToolExecution.MaxSteps.", l.spec.MaxSteps),
		Details: map[string]any{"maxSteps": l.spec.MaxSteps, "modelPasses": l.passes}}
}

// budgetError is the error when no model pass is left at the top of the loop.
func (l *loop) budgetError() error {
	details := map[string]any{"maxSteps": l.spec.MaxSteps, "modelPasses": l.passes}
	if l.contractFixes > 0 {
		details["outputContractCorrections"] = l.contractFixes
		return &contracts.Error{Code: contracts.CodeReasonOutputContractCorrectionExhausted,
			Message: fmt.Sprintf("hooks.Reason used its %d model passes before the model selected a single return contract; increase ToolExecution.MaxSteps.", l.spec.MaxSteps),
			Details: details}
	}
	return &contracts.Error{Code: contracts.CodeReasonMaxSteps,
		Message: fmt.Sprintf("hooks.Reason tool loop reached maxSteps (%d) before producing a final response; increase ToolExecution.MaxSteps.", l.spec.MaxSteps),
		Details: details}
}

// finish handles a pass that answered without tool calls; it reports whether the call is done
// (false: ask again, offering only the return tools).
func (l *loop) finish(ctx workflow.Context, resp protocol.ModelPassResult) (bool, error) {
	l.res.FinishReason = resp.FinishReason
	if len(l.spec.ReturnContracts) > 0 && l.res.Returned == nil {
		if l.missingFixes < l.spec.MissingReturnCorrections && l.passes < l.spec.MaxSteps {
			l.missingFixes++
			l.msgs = append(l.msgs,
				providers.Message{Role: providers.RoleAssistant, Content: resp.Text},
				providers.Message{Role: providers.RoleUser, Content: "You must finish by calling exactly one of these tools with the final result: " +
					strings.Join(l.toolNames(l.spec.ReturnContracts, protocol.PrefixReturn, protocol.PrefixStreamReturn), ", ") + "."})
			return false, nil
		}
		return true, &contracts.Error{Code: contracts.CodeReasonTerminalOutputMissing,
			Message: "hooks.Reason outputs.return requires one terminal output contract call, but the model finished without one; allow ToolExecution.MissingReturnCorrections or adjust the prompt.",
			Details: map[string]any{"missingReturnCorrections": l.missingFixes, "maxSteps": l.spec.MaxSteps, "modelPasses": l.passes}}
	}
	if l.spec.InterruptMode == ModeRequired && len(l.spec.Interrupts) > 0 && l.asked == 0 {
		return true, contracts.Errorf(contracts.CodeReasonInterruptRequired,
			"hooks.Reason interrupts.mode is required, but the model returned a final answer without requesting human input.")
	}
	if l.hasOutputs() {
		l.res.Text = strings.Join(l.texts, "\n")
	} else {
		l.res.Text = resp.Text
	}
	if l.spec.OutputSchema != nil {
		out, err := l.validated(ctx, "output", "", nil, false, l.spec.OutputSchema, json.RawMessage(resp.Text), resp.FinishReason, nil)
		if err != nil {
			return true, err
		}
		l.res.Output = out
	}
	return true, nil
}

// recorded decodes the journal entry under key into v.
func (s *Scope) recorded(key string, v any) bool {
	e, ok := s.journal(key)
	return ok && len(e.Value) > 0 && json.Unmarshal(e.Value, v) == nil
}

// opID returns the operation id of a Reason call: new (recorded in history) on first use, the
// journaled one when a retried node calls it again, so tool idempotency keys stay the same.
func (s *Scope) opID(ctx workflow.Context, key string) string {
	var id string
	if s.recorded(key+keyOp, &id) {
		return id
	}
	id = s.run.newID(ctx, "")
	s.record(key+keyOp, protocol.JournalEntry{Kind: entryReasonOp, Value: protocol.RawJSON(id), At: workflow.Now(ctx)})
	return id
}

func merge(res *ReasonResult, resp protocol.ModelPassResult) {
	res.Usage = protocol.AddUsage(res.Usage, resp.Usage)
	for _, w := range resp.Warnings {
		dup := false
		for _, have := range res.Warnings {
			dup = dup || have == w
		}
		if !dup {
			res.Warnings = append(res.Warnings, w)
		}
	}
	for _, k := range workflow.DeterministicKeys(resp.ProviderMetadata) {
		if res.ProviderMetadata == nil {
			res.ProviderMetadata = map[string]any{}
		}
		res.ProviderMetadata[k] = resp.ProviderMetadata[k]
	}
}
