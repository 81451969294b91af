package execution

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/temporal"
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
	Model    contracts.ModelRef
	Messages []contracts.ModelMessage
	Options  contracts.CallOptions
	Stream   bool
	Emit     bool
	Tools    []string
	MCP      []contracts.MCPServer
	MaxSteps int
	// EmitTool and Approve say, per tool name, whether tool chunks are published and whether a
	// human approves each call first.
	EmitTool func(name string) bool
	Approve  func(name string) bool
	// MaxResultChars bounds the tool result text sent back to the model (0: no bound).
	MaxResultChars int
	ModelOptions   workflow.ActivityOptions
	ToolOptions    workflow.ActivityOptions
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

	mcpTools []contracts.OfferedTool // recorded tool list of the MCP servers
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
func (spec reasonSpec) mcpServer(name string) *contracts.MCPServer {
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
func (s *Scope) Reason(ctx workflow.Context, opts ReasonOptions) (contracts.ReasonResult, error) {
	spec, err := opts.spec()
	if err != nil {
		return contracts.ReasonResult{}, err
	}
	key, err := s.key(entryReason, spec.ID)
	if err != nil {
		return contracts.ReasonResult{}, err
	}
	var res contracts.ReasonResult
	if s.recorded(key, &res) {
		return res, nil
	}
	l := &loop{s: s, spec: spec, key: key, seen: map[string]bool{}}
	l.res = contracts.ReasonResult{ID: spec.ID, OpID: s.opID(ctx, key), Steps: []contracts.ReasonStep{}}
	if len(spec.MCP) > 0 {
		if l.spec.mcpTools, err = s.listTools(ctx, key, spec); err != nil {
			return contracts.ReasonResult{}, err
		}
	}
	l.msgs = append([]contracts.ModelMessage(nil), spec.Messages...)
	if err := l.run(ctx); err != nil {
		return contracts.ReasonResult{}, err
	}
	s.record(key, protocol.JournalEntry{Kind: entryReason, Value: contracts.RawJSON(l.res), At: workflow.Now(ctx)})
	return l.res, nil
}

// loop is the state of one Reason call. Everything in it is derived deterministically from the
// journal and history, so replays and node retries rebuild it exactly (budgets and correction
// counters included).
type loop struct {
	s    *Scope
	spec reasonSpec
	key  string
	msgs []contracts.ModelMessage
	// prefixes are the conversation prefixes the worker reported as stored (learned from
	// recorded results only), oldest first: later passes send one of them by reference.
	prefixes []storedPrefix
	res      contracts.ReasonResult
	seen     map[string]bool

	passes        int // model passes of any kind, counted against MaxSteps
	texts         []string
	emissions     int
	asked         int
	schemaFixes   int // repair passes made, against SchemaCorrections (one allowance per call)
	contractFixes int // multiple-return corrections waiting for a single return
	missingFixes  int
}

// call kinds of a model turn
const (
	kindTool = iota
	kindEmit
	kindReturn
	kindInterrupt
)

type turnCall struct {
	call     contracts.ToolCall
	kind     int
	contract string
	streamed bool
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
		in := l.passInput()
		in.ControlTools = l.controlTools(returnsOnly)
		if returnsOnly {
			in.Tools, in.MCP, in.MCPTools = nil, nil, nil
		}
		resp, err := l.pass(ctx, "", in)
		if err != nil {
			return err
		}
		step := contracts.ReasonStep{Index: len(l.res.Steps), Text: resp.Text, ToolCalls: resp.ToolCalls, Usage: resp.Usage, FinishReason: resp.FinishReason}
		if resp.Text != "" {
			l.texts = append(l.texts, resp.Text)
		}
		if len(resp.ToolCalls) == 0 {
			l.res.Steps = append(l.res.Steps, step)
			done, err := l.finish(ctx, resp)
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
			if !l.hasControl(calls) || workflow.GetVersion(ctx, versionLastPassCalls, workflow.DefaultVersion, 1) >= 1 {
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
)

func returnCount(calls []turnCall) int {
	n := 0
	for _, c := range calls {
		if c.kind == kindReturn {
			n++
		}
	}
	return n
}

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
func (l *loop) finish(ctx workflow.Context, resp contracts.ModelResponse) (bool, error) {
	l.res.FinishReason = resp.FinishReason
	if len(l.spec.ReturnContracts) > 0 && l.res.Returned == nil {
		if l.missingFixes < l.spec.MissingReturnCorrections && l.passes < l.spec.MaxSteps {
			l.missingFixes++
			l.msgs = append(l.msgs,
				contracts.ModelMessage{Role: contracts.RoleAssistant, Content: resp.Text},
				contracts.ModelMessage{Role: contracts.RoleUser, Content: "You must finish by calling exactly one of these tools with the final result: " +
					strings.Join(l.toolNames(l.spec.ReturnContracts, contracts.PrefixReturn, contracts.PrefixStreamReturn), ", ") + "."})
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

// classify checks the calls of a turn (ids non-empty and unique across the operation, names
// offered) and orders them: requested order, every return moved after all other calls.
func (l *loop) classify(calls []contracts.ToolCall) ([]turnCall, error) {
	offered := l.spec.offered()
	var rest, returns []turnCall
	for _, c := range calls {
		if c.ID == "" || l.seen[c.ID] {
			return nil, &contracts.Error{Code: contracts.CodeInvalidToolCall, Message: "Model returned duplicate or empty tool call IDs.",
				Details: map[string]any{"toolCallId": c.ID}}
		}
		l.seen[c.ID] = true
		tc := turnCall{call: c, kind: -1}
		switch {
		case l.control(c.Name, contracts.PrefixEmit, l.spec.EmitContracts, false, &tc):
			tc.kind = kindEmit
		case l.control(c.Name, contracts.PrefixStreamEmit, l.spec.EmitContracts, true, &tc):
			tc.kind = kindEmit
		case l.control(c.Name, contracts.PrefixReturn, l.spec.ReturnContracts, false, &tc):
			tc.kind = kindReturn
		case l.control(c.Name, contracts.PrefixStreamReturn, l.spec.ReturnContracts, true, &tc):
			tc.kind = kindReturn
		case strings.HasPrefix(c.Name, contracts.PrefixRequestInput) && l.spec.Interrupts[strings.TrimPrefix(c.Name, contracts.PrefixRequestInput)] != nil:
			tc.kind, tc.contract = kindInterrupt, strings.TrimPrefix(c.Name, contracts.PrefixRequestInput)
		default:
			for _, name := range offered {
				if name == c.Name {
					tc.kind = kindTool
				}
			}
		}
		if tc.kind < 0 {
			return nil, &contracts.Error{Code: contracts.CodeUnknownTool, Message: fmt.Sprintf("Model requested unknown tool %q from hooks.Reason.", c.Name),
				Details: map[string]any{"tool": c.Name}}
		}
		if tc.kind == kindReturn {
			returns = append(returns, tc)
		} else {
			rest = append(rest, tc)
		}
	}
	return append(rest, returns...), nil
}

// control matches a control tool name against contracts of one prefix.
func (l *loop) control(name, prefix string, set map[string]*contracts.OutputContract, streamed bool, tc *turnCall) bool {
	cname, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	c := set[cname]
	if c == nil || c.Streamed() != streamed {
		return false
	}
	tc.contract, tc.streamed = cname, streamed
	return true
}

func (l *loop) hasControl(calls []turnCall) bool {
	for _, c := range calls {
		if c.kind != kindTool {
			return true
		}
	}
	return false
}

// outcome is what the journal keeps of one processed call of a turn.
type outcome struct {
	Result    contracts.ToolResult       `json:"result"`
	Emission  *contracts.Emission        `json:"emission,omitempty"`
	Returned  bool                       `json:"returned,omitempty"`
	Interrupt *contracts.InterruptRecord `json:"interrupt,omitempty"`
	Evidence  bool                       `json:"evidence,omitempty"`
	Fix       bool                       `json:"fix,omitempty"` // a multiple-return correction
	// What the call spent, so that reusing the outcome keeps the loop's counters: its model
	// passes (generation and repair, journaled under their indexes), the steps they added and
	// the schema corrections among them.
	Passes int                    `json:"passes,omitempty"`
	Steps  []contracts.ReasonStep `json:"steps,omitempty"`
	Fixes  int                    `json:"fixes,omitempty"`
}

// turn processes the calls of one model turn in order; every call gets exactly one result.
func (l *loop) turn(ctx workflow.Context, resp contracts.ModelResponse, calls []turnCall) ([]contracts.ToolResult, error) {
	nReturns := returnCount(calls)
	done := map[string]contracts.ToolResult{}
	evidence, fixed := false, false
	var results []contracts.ToolResult
	for _, tc := range calls {
		out, err := l.process(ctx, resp, calls, tc, done, evidence, nReturns > 1)
		if err != nil {
			return results, err
		}
		evidence = evidence || out.Evidence
		fixed = fixed || out.Fix
		if out.Emission != nil {
			if out.Returned {
				em := *out.Emission
				l.res.Returned = &em
				l.contractFixes = 0
			} else {
				l.res.Emissions = append(l.res.Emissions, *out.Emission)
				l.emissions++
			}
		}
		if out.Interrupt != nil {
			l.res.InterruptHistory = append(l.res.InterruptHistory, *out.Interrupt)
			l.asked++
		}
		if tc.kind == kindTool {
			l.res.ToolCalls = append(l.res.ToolCalls, tc.call)
			l.res.ToolResults = append(l.res.ToolResults, out.Result)
		}
		done[tc.call.ID] = out.Result
		results = append(results, out.Result)
	}
	if fixed {
		l.contractFixes++ // one correction per turn that named several returns
	}
	l.msgs = append(l.msgs, l.turnMessages(resp, done)...)
	return results, nil
}

// turnMessages is the assistant message of a turn and one tool message per call, in the
// model's order; a call without a result yet is reported as not completed.
func (l *loop) turnMessages(resp contracts.ModelResponse, done map[string]contracts.ToolResult) []contracts.ModelMessage {
	msgs := []contracts.ModelMessage{{Role: contracts.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Continuation: resp.Continuation}}
	for _, c := range resp.ToolCalls {
		r, ok := done[c.ID]
		content := "This call has not completed yet; its result will follow."
		if ok {
			content = r.Content
			if max := l.spec.MaxResultChars; max > 0 && len(content) > max {
				content = content[:max] + fmt.Sprintf("\n[truncated: %d more characters]", len(r.Content)-max)
			}
		}
		msgs = append(msgs, contracts.ModelMessage{Role: contracts.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: content, IsError: ok && r.IsError})
	}
	return msgs
}

// process handles one call, reusing its journaled outcome when there is one.
func (l *loop) process(ctx workflow.Context, resp contracts.ModelResponse, calls []turnCall, tc turnCall,
	done map[string]contracts.ToolResult, evidence, multipleReturns bool) (outcome, error) {
	okey := l.key + keyCall + tc.call.ID
	var out outcome
	if l.s.recorded(okey, &out) {
		// Runs recorded before outcomes kept their passes went on without them: so they do on
		// replay (the version is only asked where the two differ).
		if (out.Passes > 0 || out.Fixes > 0) && workflow.GetVersion(ctx, versionReusedOutcomes, workflow.DefaultVersion, 1) >= 1 {
			for i := 0; i < out.Passes; i++ {
				var resp contracts.ModelResponse
				if l.s.recorded(passKey(l.key, l.passes), &resp) {
					merge(&l.res, resp)
				}
				l.passes++
			}
			l.res.Steps = append(l.res.Steps, out.Steps...)
			l.schemaFixes += out.Fixes
		}
		return out, nil
	}
	passes, steps, fixes := l.passes, len(l.res.Steps), l.schemaFixes
	var err error
	switch tc.kind {
	case kindTool:
		out.Result, err = l.s.toolCall(ctx, l.key, l.spec, l.res.OpID, tc.call)
		out.Evidence = true
	case kindInterrupt:
		out, err = l.ask(ctx, tc)
	case kindEmit, kindReturn:
		if tc.kind == kindReturn && multipleReturns {
			out = outcome{Fix: true, Result: contracts.ToolResult{ToolCallID: tc.call.ID, Name: tc.call.Name, IsError: true,
				Content: "MULTIPLE_TERMINAL_OUTPUTS: No terminal output was published. Select exactly one return contract and call it once."}}
			break
		}
		out, err = l.output(ctx, resp, calls, tc, done, evidence)
	}
	if err != nil {
		return out, err
	}
	out.Passes, out.Steps, out.Fixes = l.passes-passes, append([]contracts.ReasonStep(nil), l.res.Steps[steps:]...), l.schemaFixes-fixes
	l.s.record(okey, protocol.JournalEntry{Kind: entryReasonCall, Value: contracts.RawJSON(out), At: workflow.Now(ctx)})
	return out, nil
}

// ask handles an interrupt contract call (F3.8): a malformed request goes back to the model as
// an isError result (no human is asked, MaxRequests is not consumed); a valid one pauses the run
// with a custom interrupt and the validated answer becomes the tool result.
func (l *loop) ask(ctx workflow.Context, tc turnCall) (outcome, error) {
	c := l.spec.Interrupts[tc.contract]
	res := contracts.ToolResult{ToolCallID: tc.call.ID, Name: tc.call.Name}
	if l.asked >= l.spec.MaxRequests {
		return outcome{}, &contracts.Error{Code: contracts.CodeReasonMaxRequests,
			Message: fmt.Sprintf("hooks.Reason reached interrupts.maxRequests (%d).", l.spec.MaxRequests),
			Details: map[string]any{"maxRequests": l.spec.MaxRequests}}
	}
	if issues := c.RequestSchema.ValidateJSON(tc.call.Arguments); len(issues) > 0 {
		e := &contracts.Error{Code: contracts.CodeSchemaValidation,
			Message: fmt.Sprintf("The request for %q does not match its schema; fix the arguments and call %s again", tc.contract, tc.call.Name), Issues: issues}
		f := e.Failure()
		res.IsError, res.Content, res.Failure = true, e.Error(), &f
		return outcome{Result: res}, nil
	}
	var q struct {
		Question string `json:"question"`
	}
	_ = json.Unmarshal(tc.call.Arguments, &q)
	reasonID := l.spec.ID
	if reasonID == "" {
		reasonID = "reason"
	}
	hookID := fmt.Sprintf("%s:%s:%d", reasonID, tc.contract, l.asked)
	in := contracts.InterruptInput{Kind: contracts.InterruptCustom, Question: q.Question, ID: hookID, SchemaID: c.SchemaID,
		SchemaVersion: c.SchemaVersion, Options: []contracts.Option{}, Contract: tc.contract, Request: tc.call.Arguments}
	ans, err := l.s.interruptKeyed(ctx, l.key+"/ask/"+tc.call.ID, hookID, in, c.ResponseSchema)
	if err != nil {
		return outcome{}, err
	}
	res.Content = string(ans.Value)
	res.StructuredContent = ans.Value
	return outcome{Result: res, Evidence: true,
		Interrupt: &contracts.InterruptRecord{Contract: tc.contract, Request: tc.call.Arguments, Response: ans.Value}}, nil
}

// output handles an emit or return call (F3.7, F3.9): the drafted arguments are the value,
// unless the contract streams or the call follows completed results of the same turn — then
// the value is generated in a separate pass. The value is validated (and repaired) before
// anything is published.
func (l *loop) output(ctx workflow.Context, resp contracts.ModelResponse, calls []turnCall, tc turnCall,
	done map[string]contracts.ToolResult, evidence bool) (outcome, error) {
	set, kind := l.spec.EmitContracts, "emit"
	if tc.kind == kindReturn {
		set, kind = l.spec.ReturnContracts, "return"
	}
	c := set[tc.contract]
	if tc.kind == kindEmit && l.emissions >= l.spec.MaxEmissions {
		return outcome{}, &contracts.Error{Code: contracts.CodeReasonMaxEmissions,
			Message: fmt.Sprintf("hooks.Reason reached outputs.maxEmissions (%d).", l.spec.MaxEmissions),
			Details: map[string]any{"maxEmissions": l.spec.MaxEmissions}}
	}
	index := "return"
	if tc.kind == kindEmit {
		index = strconv.Itoa(l.emissions)
	}
	streamID := fmt.Sprintf("%s:%s:%s:%s", l.res.OpID, kind, tc.contract, index)
	value := tc.call.Arguments
	var stream *contracts.StructuredStream
	if tc.streamed || evidence {
		if tc.streamed && !l.spec.Stream {
			return outcome{}, contracts.Errorf(contracts.CodeInvalidRequest,
				"hooks.Reason: streamed output contract %q needs a streaming call; remove Buffered or the contract's stream fields", tc.contract)
		}
		var instruction string
		if tc.streamed {
			var args struct {
				Instruction string `json:"instruction"`
			}
			if json.Unmarshal(tc.call.Arguments, &args) != nil || strings.TrimSpace(args.Instruction) == "" {
				// The control tool's schema requires an instruction: treat it as an invalid value.
				return l.invalidCall(tc, "the streamed output tool needs a non-empty \"instruction\"")
			}
			instruction = args.Instruction
			stream = &contracts.StructuredStream{StreamID: streamID, DataType: c.SchemaID, SchemaID: c.SchemaID, SchemaVersion: c.SchemaVersion, Fields: c.StreamFields}
		} else {
			instruction = "Draft: " + string(tc.call.Arguments)
		}
		msgs := append(append([]contracts.ModelMessage(nil), l.msgs...), l.turnMessages(resp, done)...)
		msgs = append(msgs, contracts.ModelMessage{Role: contracts.RoleUser, Content: fmt.Sprintf(
			"Generate output contract %q: %s\nUse the results above as evidence.\n%s\nReply with only the JSON value.", tc.contract, c.Description, instruction)})
		gen, err := l.generate(ctx, msgs, c.Schema, stream)
		if err != nil {
			return outcome{}, err
		}
		value = json.RawMessage(gen.Text)
		v, err := l.validated(ctx, tc.contract, streamID, stream, gen.FieldsPublished, c.Schema, value, gen.FinishReason, msgs)
		if err != nil {
			return outcome{}, err
		}
		value = v
	} else {
		v, err := l.validated(ctx, tc.contract, streamID, nil, false, c.Schema, value, contracts.FinishReason{Unified: contracts.FinishToolCalls},
			append(append([]contracts.ModelMessage(nil), l.msgs...), l.turnMessages(resp, done)...))
		if err != nil {
			return outcome{}, err
		}
		value = v
	}
	l.s.run.Emit(contracts.Chunk{Type: contracts.ChunkStructuredData, Kind: contracts.StructuredFinal, StreamID: streamID,
		DataType: c.SchemaID, SchemaID: c.SchemaID, SchemaVersion: c.SchemaVersion, Node: l.s.node, ID: l.spec.ID, Data: value})
	em := &contracts.Emission{Contract: tc.contract, Data: value, StreamID: streamID}
	if tc.kind == kindEmit {
		em.Index = l.emissions
	}
	content, _ := json.Marshal(map[string]any{"emitted": true, "data": value})
	return outcome{Emission: em, Returned: tc.kind == kindReturn,
		Result: contracts.ToolResult{ToolCallID: tc.call.ID, Name: tc.call.Name, Content: string(content)}}, nil
}

// invalidCall reports a malformed control call back to the model.
func (l *loop) invalidCall(tc turnCall, msg string) (outcome, error) {
	e := contracts.Errorf(contracts.CodeSchemaValidation, "%s: %s", tc.call.Name, msg)
	f := e.Failure()
	return outcome{Result: contracts.ToolResult{ToolCallID: tc.call.ID, Name: tc.call.Name, IsError: true, Content: e.Error(), Failure: &f}}, nil
}

// validated parses and validates an output value, repairing it with output-only passes as long
// as corrections and budget allow (seed 000). SchemaCorrections is one allowance for the whole
// call, shared by all its values. Truncated output is never repaired. A streamed value whose
// provisional fields were published (published) is invalidated before anything else.
func (l *loop) validated(ctx workflow.Context, contract, streamID string, stream *contracts.StructuredStream, published bool, schema *contracts.Schema,
	value json.RawMessage, finish contracts.FinishReason, evidence []contracts.ModelMessage) (json.RawMessage, error) {
	attempts := 0 // repairs of this value
	for {
		parsed, err := parseOutput(value, finish, schema)
		if err == nil {
			return parsed, nil
		}
		if stream != nil {
			// Runs recorded before passes reported their fields invalidated every streamed value
			// that failed: so they do on replay (the version is only asked where the two differ).
			if published || workflow.GetVersion(ctx, versionInvalidatePublished, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
				l.s.run.Emit(contracts.Chunk{Type: contracts.ChunkStructuredInvalidated, StreamID: streamID, Node: l.s.node})
			}
			stream = nil // repairs are buffered; the final value is published once valid
		}
		if contracts.CodeOf(err) == contracts.CodeOutputTruncated || l.spec.SchemaCorrections == 0 {
			return nil, err
		}
		// Runs recorded before the allowance was shared gave each value its own: so they do on
		// replay (the version is only asked where the two differ).
		if l.schemaFixes >= l.spec.SchemaCorrections &&
			(attempts >= l.spec.SchemaCorrections || workflow.GetVersion(ctx, versionSharedCorrections, workflow.DefaultVersion, 1) >= 1) {
			return nil, &contracts.Error{Code: contracts.CodeReasonOutputSchemaCorrectionExhausted,
				Message: fmt.Sprintf("hooks.Reason: the value of %q is invalid and the call's %d schema correction(s) are used up; raise SchemaCorrections or fix the prompt.", orOutput(contract), l.schemaFixes),
				Details: map[string]any{"contract": orOutput(contract), "attempts": l.schemaFixes, "terminalReason": string(contracts.CodeOf(err))},
				Issues:  contracts.FailureOf(err).Issues, Err: err}
		}
		attempts++
		l.schemaFixes++
		msgs := append(append([]contracts.ModelMessage(nil), evidence...), contracts.ModelMessage{Role: contracts.RoleUser, Content: repairPrompt(contract, schema, value, err)})
		if evidence == nil {
			msgs = append(append([]contracts.ModelMessage(nil), l.msgs...), msgs...)
		}
		gen, gerr := l.generate(ctx, msgs, schema, nil)
		if gerr != nil {
			return nil, gerr
		}
		value, finish = json.RawMessage(gen.Text), gen.FinishReason
	}
}

func orOutput(contract string) string {
	if contract == "" || contract == "output" {
		return "output"
	}
	return contract
}

func repairPrompt(contract string, schema *contracts.Schema, value json.RawMessage, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The value you produced for %q is invalid", orOutput(contract))
	if f := contracts.FailureOf(err); len(f.Issues) > 0 {
		b.WriteString(":\n")
		for _, is := range f.Issues {
			fmt.Fprintf(&b, "- %s\n", is.String())
		}
	} else {
		fmt.Fprintf(&b, ": %s\n", contracts.FailureOf(err).Message)
	}
	fmt.Fprintf(&b, "Invalid value: %s\nSchema: %s\nReply with only a corrected JSON value that matches the schema.", value, schema.Raw())
	return b.String()
}

// parseOutput reads a model's JSON value (bare or in a ```json fence) and validates it:
// OUTPUT_TRUNCATED when the model ran out of tokens or the JSON stops midway, INVALID_MODEL_JSON
// when it is not JSON, MODEL_OUTPUT_SCHEMA when it does not match the schema.
func parseOutput(value json.RawMessage, finish contracts.FinishReason, schema *contracts.Schema) (json.RawMessage, error) {
	text := strings.TrimSpace(string(value))
	if i := strings.Index(text, "```"); i >= 0 {
		rest := text[i+3:]
		rest = strings.TrimPrefix(rest, "json")
		if j := strings.Index(rest, "```"); j >= 0 {
			rest = rest[:j]
		}
		text = strings.TrimSpace(rest)
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		if finish.Unified == contracts.FinishLength || strings.Contains(err.Error(), "unexpected end of JSON input") {
			return nil, contracts.Errorf(contracts.CodeOutputTruncated,
				"the model's output was truncated before the JSON value ended; increase MaxOutputTokens (Options.MaxOutputTokens)")
		}
		return nil, &contracts.Error{Code: contracts.CodeInvalidModelJSON, Message: "the model's output is not a JSON value: " + err.Error(), Err: err}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(text)); err != nil {
		return nil, &contracts.Error{Code: contracts.CodeInvalidModelJSON, Message: err.Error(), Err: err}
	}
	if issues := schema.ValidateJSON(buf.Bytes()); len(issues) > 0 {
		return nil, &contracts.Error{Code: contracts.CodeModelOutputSchema, Message: "the model's output does not match the schema", Issues: issues}
	}
	return buf.Bytes(), nil
}

// generate runs an output-only pass (no tools) constrained to schema; streamed when stream is
// set. It counts against MaxSteps: with no pass left it fails with
// REASON_OUTPUT_BUDGET_EXHAUSTED before anything is published.
func (l *loop) generate(ctx workflow.Context, msgs []contracts.ModelMessage, schema *contracts.Schema, stream *contracts.StructuredStream) (contracts.ModelResponse, error) {
	if l.passes >= l.spec.MaxSteps {
		return contracts.ModelResponse{}, &contracts.Error{Code: contracts.CodeReasonOutputBudgetExhausted,
			Message: fmt.Sprintf("hooks.Reason has no model pass left (maxSteps %d) to generate an output value; increase maxSteps (ToolExecution.MaxSteps).", l.spec.MaxSteps),
			Details: map[string]any{"maxSteps": l.spec.MaxSteps, "modelPasses": l.passes}}
	}
	in := l.passInput()
	in.Messages = msgs
	in.Tools, in.MCP, in.MCPTools = nil, nil, nil
	in.Emit = false
	in.Stream = stream != nil
	in.Structured = stream
	opts := in.Options
	opts.ResponseFormat = &contracts.ResponseFormat{Type: "json-schema", Schema: schema.Raw(), Name: "output"}
	in.Options = opts
	resp, err := l.pass(ctx, "output", in)
	if err != nil {
		return resp, err
	}
	l.res.Steps = append(l.res.Steps, contracts.ReasonStep{Index: len(l.res.Steps), Kind: "output", Text: resp.Text, Usage: resp.Usage, FinishReason: resp.FinishReason})
	return resp, nil
}

// passInput is the model pass input of the loop's current state.
func (l *loop) passInput() contracts.ModelPassInput {
	in := contracts.ModelPassInput{
		RunID: l.s.run.stream, Node: l.s.node, HookID: l.spec.ID, OpID: l.res.OpID,
		Model: l.spec.Model, Messages: l.msgs, Tools: l.spec.Tools, Options: l.spec.Options,
		Stream: l.spec.Stream, Emit: l.spec.Emit && l.spec.OutputSchema == nil, MCP: l.spec.MCP,
		MaxFailures: l.spec.ModelFailures,
	}
	for _, t := range l.spec.mcpTools {
		in.MCPTools = append(in.MCPTools, t.Name)
	}
	return in
}

// pass runs one model pass (journaled under its index) and merges its usage.
func (l *loop) pass(ctx workflow.Context, kind string, in contracts.ModelPassInput) (contracts.ModelResponse, error) {
	n := l.passes
	l.passes++
	in.SegmentID = "step-" + strconv.Itoa(n)
	resp, err := l.s.modelPass(ctx, l.key, n, l.byReference(in), in, l.spec.ModelOptions)
	if err != nil {
		return resp, err
	}
	l.learnStored(in.Messages, resp.StoredPrefix)
	merge(&l.res, resp)
	return resp, nil
}

// sameMessage reports whether a is b as the loop keeps it (a pass's messages are l.msgs
// followed by messages of the pass; content strings share their bytes, so this is cheap).
func sameMessage(a, b contracts.ModelMessage) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || a.Name != b.Name ||
		a.IsError != b.IsError || string(a.StructuredContent) != string(b.StructuredContent) ||
		string(a.Continuation) != string(b.Continuation) || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i, c := range a.ToolCalls {
		d := b.ToolCalls[i]
		if c.ID != d.ID || c.Name != d.Name || string(c.Arguments) != string(d.Arguments) {
			return false
		}
	}
	return true
}

// storedPrefix is a prefix the worker stored and the messages it holds (as the loop sent them).
type storedPrefix struct {
	ref  contracts.MessagePrefix
	msgs []contracts.ModelMessage
}

// keptPrefixes bounds how many stored prefixes a loop remembers (the newest ones): a pass
// almost always extends the newest.
const keptPrefixes = 4

// byReference is in with the longest stored prefix of its messages (learned from recorded
// results only) sent by one reference and only the messages after it inline. Without a stored
// prefix (a worker without a message store, a history recorded before) it is in, unchanged.
func (l *loop) byReference(in contracts.ModelPassInput) contracts.ModelPassInput {
	best := -1
	for i, sp := range l.prefixes {
		if sp.ref.Count > len(in.Messages) || (best >= 0 && sp.ref.Count <= l.prefixes[best].ref.Count) {
			continue
		}
		same := true
		for j := 0; j < sp.ref.Count && same; j++ {
			same = sameMessage(in.Messages[j], sp.msgs[j])
		}
		if same {
			best = i
		}
	}
	if best < 0 {
		return in
	}
	ref := l.prefixes[best].ref
	in.Messages = append([]contracts.ModelMessage{}, in.Messages[ref.Count:]...)
	in.Prefix = &ref
	return in
}

// learnStored records the prefix a pass's result (recorded, so replays and node retries learn
// the same) reports as stored by the worker: the first Count messages the pass sent.
func (l *loop) learnStored(sent []contracts.ModelMessage, p *contracts.MessagePrefix) {
	if p == nil || p.Hash == "" || p.Count <= 0 || p.Count > len(sent) {
		return
	}
	l.prefixes = append(l.prefixes, storedPrefix{ref: *p, msgs: append([]contracts.ModelMessage(nil), sent[:p.Count]...)})
	if len(l.prefixes) > keptPrefixes {
		l.prefixes = append([]storedPrefix(nil), l.prefixes[len(l.prefixes)-keptPrefixes:]...)
	}
}

// controlTools are the tool definitions of the call's output and interrupt contracts.
func (l *loop) controlTools(returnsOnly bool) []contracts.ToolDefinition {
	var out []contracts.ToolDefinition
	add := func(set map[string]*contracts.OutputContract, prefix, streamPrefix, verb string) {
		for _, name := range workflow.DeterministicKeys(set) {
			c := set[name]
			if c.Streamed() {
				out = append(out, contracts.ToolDefinition{Name: streamPrefix + name,
					Description: fmt.Sprintf("%s %s: %s. Give an instruction; the value is generated and streamed separately.", verb, name, c.Description),
					InputSchema: json.RawMessage(`{"type":"object","properties":{"instruction":{"type":"string","minLength":1}},"required":["instruction"],"additionalProperties":false}`)})
				continue
			}
			out = append(out, contracts.ToolDefinition{Name: prefix + name, Description: fmt.Sprintf("%s %s: %s", verb, name, c.Description), InputSchema: c.Schema.Raw()})
		}
	}
	if !returnsOnly {
		add(l.spec.EmitContracts, contracts.PrefixEmit, contracts.PrefixStreamEmit, "Publish")
		for _, name := range workflow.DeterministicKeys(l.spec.Interrupts) {
			c := l.spec.Interrupts[name]
			out = append(out, contracts.ToolDefinition{Name: contracts.PrefixRequestInput + name,
				Description: c.Description + " Calling this pauses until a human answers; the answer is the tool result.",
				InputSchema: c.RequestSchema.Raw()})
		}
	}
	add(l.spec.ReturnContracts, contracts.PrefixReturn, contracts.PrefixStreamReturn, "Finish with")
	return out
}

func (l *loop) toolNames(set map[string]*contracts.OutputContract, prefix, streamPrefix string) []string {
	var out []string
	for _, name := range workflow.DeterministicKeys(set) {
		if set[name].Streamed() {
			out = append(out, streamPrefix+name)
		} else {
			out = append(out, prefix+name)
		}
	}
	return out
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
	id = NewID(ctx, "")
	s.record(key+keyOp, protocol.JournalEntry{Kind: entryReasonOp, Value: contracts.RawJSON(id), At: workflow.Now(ctx)})
	return id
}

func merge(res *contracts.ReasonResult, resp contracts.ModelResponse) {
	res.Usage = res.Usage.Add(resp.Usage)
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

// listTools reads the tool list of the call's MCP servers once (an activity, recorded in
// history and in the journal) so that every pass, replay and retry sees the same tools.
func (s *Scope) listTools(ctx workflow.Context, key string, spec reasonSpec) ([]contracts.OfferedTool, error) {
	var out []contracts.OfferedTool
	if s.recorded(key+keyList, &out) {
		return out, nil
	}
	// No attempt limit (an attempt lost to a dead worker must not use up a budget), bounded in
	// time; an unreachable server fails the call after three minutes.
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: 3 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
		Summary:     "list MCP tools", ActivityID: s.run.activityID(s.node, "mcp")})
	if err := workflow.ExecuteActivity(actx, contracts.ListToolsActivityName, contracts.ListToolsInput{Servers: spec.MCP}).Get(actx, &out); err != nil {
		return nil, err
	}
	s.record(key+keyList, protocol.JournalEntry{Kind: entryTools, Value: contracts.RawJSON(out), At: workflow.Now(ctx)})
	return out, nil
}

// modelSummary is the summary of a model pass activity (its ActivityOptions.Summary, shown by
// the Temporal UI and CLI): "model <provider>:<model>", "model <provider>" (the provider's
// default model), "model <model> (default provider)" or "model (the worker's default)".
// It is metadata of the scheduled activity and plays no part in replay.
func modelSummary(ref contracts.ModelRef) string {
	switch {
	case ref.Provider != "" && ref.Model != "":
		return "model " + ref.Provider + ":" + ref.Model
	case ref.Provider != "":
		return "model " + ref.Provider
	case ref.Model != "":
		return "model " + ref.Model + " (default provider)"
	}
	return "model (the worker's default)"
}

// toolSummary is the summary of a tool call activity: "tool <name>".
func toolSummary(name string) string { return "tool " + name }

// passKey is the journal key of pass n of the Reason call key.
func passKey(key string, n int) string { return key + keyPass + strconv.Itoa(n) }

// modelPass runs the model activity for pass n of the call key (journaled) with in, whose
// messages may start with a stored prefix; when the worker cannot read it (PAYLOAD_MISSING,
// PAYLOAD_CODEC_FAILED, or its store failing: PERSISTENCE_ERROR; a recorded failure) the pass
// runs once more with every message inline (the same pass: no second reservation).
func (s *Scope) modelPass(ctx workflow.Context, key string, n int, in, inline contracts.ModelPassInput, opts workflow.ActivityOptions) (contracts.ModelResponse, error) {
	pkey := passKey(key, n)
	var resp contracts.ModelResponse
	if s.recorded(pkey, &resp) {
		return resp, nil
	}
	if err := checkPassSize(in); err != nil {
		return resp, err
	}
	if err := s.run.Reserve(ctx, contracts.LimitModelPasses); err != nil {
		return resp, err
	}
	s.run.Flush(ctx)
	opts.Summary = modelSummary(in.Model) // what the Temporal UI shows for the activity
	opts.ActivityID = s.run.activityID(s.node, "model")
	actx := workflow.WithActivityOptions(ctx, opts)
	err := workflow.ExecuteActivity(actx, contracts.ModelActivityName, in).Get(actx, &resp)
	if code := contracts.CodeOf(err); in.Prefix != nil && (code == contracts.CodePayloadMissing || code == contracts.CodePersistenceError || code == contracts.CodePayloadCodec) {
		if serr := checkPassSize(inline); serr != nil {
			return resp, serr
		}
		resp = contracts.ModelResponse{}
		if opts.ActivityID != "" {
			opts.ActivityID = s.run.activityID(s.node, "model") // an id of its own for the second attempt
			actx = workflow.WithActivityOptions(ctx, opts)
		}
		err = workflow.ExecuteActivity(actx, contracts.ModelActivityName, inline).Get(actx, &resp)
	}
	if err != nil {
		return resp, err
	}
	s.run.AddUsage(resp.Usage)
	s.record(pkey, protocol.JournalEntry{Kind: entryModelPass, Value: contracts.RawJSON(resp), At: workflow.Now(ctx)})
	return resp, nil
}

// checkPassSize fails a model pass input over the payload limit early, with its code, instead
// of failing the workflow task.
func checkPassSize(in contracts.ModelPassInput) error {
	b, err := json.Marshal(in)
	if err != nil {
		return contracts.Errorf(contracts.CodeInvalidRequest, "hooks.Reason: the model call cannot be encoded: %v", err)
	}
	return contracts.CheckPayloadSize("the model call of hooks.Reason", len(b), "shorten the history or bound tool results (ToolExecution.MaxResultChars)")
}

// toolCall runs one business tool call, after approval when required.
func (s *Scope) toolCall(ctx workflow.Context, key string, spec reasonSpec, opID string, call contracts.ToolCall) (contracts.ToolResult, error) {
	var res contracts.ToolResult
	emit := spec.EmitTool(call.Name)
	attr := func(c contracts.Chunk) contracts.Chunk {
		c.Node, c.ID, c.OpID, c.Tool, c.ToolCallID = s.node, spec.ID, opID, call.Name, call.ID
		return c
	}
	if spec.Approve(call.Name) {
		meta, _ := json.Marshal(map[string]any{"tool": call.Name, "toolCallId": call.ID, "input": call.Arguments})
		in := contracts.InterruptInput{
			Kind: contracts.InterruptChoice, Question: "Approve " + call.Name + "?", ID: "tool:" + call.ID, Meta: meta,
			Options: []contracts.Option{{ID: "approve", Label: "Approve"}, {ID: "deny", Label: "Deny"}},
		}
		ans, err := s.interruptKeyed(ctx, key+"/approval/"+call.ID, "tool:"+call.ID, in, nil)
		if err != nil {
			return res, err
		}
		if ans.Selected[0] == "deny" {
			res = contracts.ToolResult{ToolCallID: call.ID, Name: call.Name, Content: "Tool call denied by user.", IsError: true}
			if emit {
				s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallStart, Input: call.Arguments}))
				s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallResult, Content: res.Content, IsError: true}))
			}
			return res, nil
		}
	}
	if err := s.run.Reserve(ctx, contracts.LimitToolCalls); err != nil {
		return res, err
	}
	if emit {
		s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallStart, Input: call.Arguments}))
		s.run.Flush(ctx)
	}
	in := contracts.ToolCallInput{RunID: s.run.ID, Tool: call.Name, ToolCallID: call.ID, Input: call.Arguments,
		IdempotencyKey: s.run.ID + ":" + opID + ":" + call.ID, MCP: spec.mcpServer(call.Name),
		Node: s.node, Stream: s.run.stream, MaxFailures: spec.ToolFailures}
	topts := spec.ToolOptions
	topts.Summary = toolSummary(call.Name) // what the Temporal UI shows for the activity
	if in.MCP == nil && s.run.localTool(ctx, call.Name) {
		// The same activity, run by this worker inside the workflow task (tools.Local), with
		// the regular call's timeout and retry policy.
		lctx := workflow.WithLocalActivityOptions(ctx, localToolOptions(topts))
		if err := workflow.ExecuteLocalActivity(lctx, contracts.ToolActivityName, in).Get(lctx, &res); err != nil {
			return res, localToolError(err)
		}
	} else {
		topts.ActivityID = s.run.activityID(s.node, "tool")
		actx := workflow.WithActivityOptions(ctx, topts)
		if err := workflow.ExecuteActivity(actx, contracts.ToolActivityName, in).Get(actx, &res); err != nil {
			return res, err
		}
	}
	if emit {
		if res.Failure != nil {
			// The descriptor's message, not the content: a plain tool error's text is for the
			// model only.
			s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallError, Message: res.Failure.Message, Failure: res.Failure}))
		} else {
			s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallResult, Content: res.Content,
				StructuredContent: res.StructuredContent, IsError: res.IsError}))
		}
	}
	return res, nil
}

// localTool reports whether the run executes the worker tool name as a local activity. The
// worker's set (Run.LocalTools) is configuration that may change between deploys, so the run
// records it once, at its first worker tool call, and keeps it: a replay, or a run that waits
// across a deploy, runs every call the way the run started. Runs recorded before local tools
// existed have no record and run every tool as a regular activity.
func (r *Run) localTool(ctx workflow.Context, name string) bool {
	if r.local == nil {
		r.local = map[string]bool{}
		if workflow.GetVersion(ctx, versionLocalTools, workflow.DefaultVersion, 1) >= 1 {
			configured := append([]string{}, r.LocalTools...)
			var names []string
			if err := workflow.SideEffect(ctx, func(workflow.Context) any { return configured }).Get(&names); err != nil {
				// Cannot happen for a list of strings; regular activities are always safe.
				workflow.GetLogger(ctx).Warn("kortyx: reading the recorded local tools failed; tools run as regular activities", "error", err)
			}
			for _, n := range names {
				r.local[n] = true
			}
		}
	}
	return r.local[name]
}

// unboundedLocalWindow stands for "no bound" in the ScheduleToCloseTimeout of a local tool call:
// a regular activity without one is retried until its policy gives up, a local activity
// without one would get only its StartToCloseTimeout.
const unboundedLocalWindow = 10 * 365 * 24 * time.Hour

// localToolOptions are the local activity options of a local tool call: the regular call's
// timeout, retry policy and retry window (heartbeats do not apply to local activities).
func localToolOptions(o workflow.ActivityOptions) workflow.LocalActivityOptions {
	window := o.ScheduleToCloseTimeout
	if window <= 0 {
		window = unboundedLocalWindow
	}
	return workflow.LocalActivityOptions{StartToCloseTimeout: o.StartToCloseTimeout, ScheduleToCloseTimeout: window,
		RetryPolicy: o.RetryPolicy, Summary: o.Summary}
}

// localToolError is the error of a failed local tool call as a regular call reports it: an
// *temporal.ActivityError of kortyx.Tool around the cause, which is where the failure's code,
// its "activity" context and a timeout's ACTIVITY_TIMEOUT are read from. The SDK returns a
// local activity's failure without that wrapper (its test environment wraps it, naming the Go
// function); a cancellation is returned as it is, as for a regular call. The cause chain
// (codes, details, timeout type) is kept: the failure is converted to its Temporal form and
// back, with the default failure converter the workers use.
func localToolError(err error) error {
	fc := temporal.GetDefaultFailureConverter()
	var ae *temporal.ActivityError
	if errors.As(err, &ae) {
		if ae.ActivityType().GetName() == contracts.ToolActivityName {
			return err
		}
		f := fc.ErrorToFailure(ae)
		if info := f.GetActivityFailureInfo(); info != nil {
			info.ActivityType = &commonpb.ActivityType{Name: contracts.ToolActivityName}
			return fc.FailureToError(f)
		}
		return err
	}
	if temporal.IsCanceledError(err) {
		return err
	}
	return fc.FailureToError(&failurepb.Failure{Message: "activity error", Source: "GoSDK", Cause: fc.ErrorToFailure(err),
		FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
			ActivityType: &commonpb.ActivityType{Name: contracts.ToolActivityName}}}})
}
