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

// call kinds of a model turn
const (
	kindTool = iota
	kindEmit
	kindReturn
	kindInterrupt
)

type turnCall struct {
	call     providers.ToolCall
	kind     int
	contract string
	streamed bool
}

func returnCount(calls []turnCall) int {
	n := 0
	for _, c := range calls {
		if c.kind == kindReturn {
			n++
		}
	}
	return n
}

// classify checks the calls of a turn (ids non-empty and unique across the operation, names
// offered) and orders them: requested order, every return moved after all other calls.
func (l *loop) classify(calls []providers.ToolCall) ([]turnCall, error) {
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
		case l.control(c.Name, protocol.PrefixEmit, l.spec.EmitContracts, false, &tc):
			tc.kind = kindEmit
		case l.control(c.Name, protocol.PrefixStreamEmit, l.spec.EmitContracts, true, &tc):
			tc.kind = kindEmit
		case l.control(c.Name, protocol.PrefixReturn, l.spec.ReturnContracts, false, &tc):
			tc.kind = kindReturn
		case l.control(c.Name, protocol.PrefixStreamReturn, l.spec.ReturnContracts, true, &tc):
			tc.kind = kindReturn
		case strings.HasPrefix(c.Name, protocol.PrefixRequestInput) && l.spec.Interrupts[strings.TrimPrefix(c.Name, protocol.PrefixRequestInput)] != nil:
			tc.kind, tc.contract = kindInterrupt, strings.TrimPrefix(c.Name, protocol.PrefixRequestInput)
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
	if c == nil || (len(c.StreamFields) > 0) != streamed {
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
	Result    providers.ToolResult      `json:"result"`
	Emission  *protocol.Emission        `json:"emission,omitempty"`
	Returned  bool                      `json:"returned,omitempty"`
	Interrupt *protocol.InterruptRecord `json:"interrupt,omitempty"`
	Evidence  bool                      `json:"evidence,omitempty"`
	Fix       bool                      `json:"fix,omitempty"` // a multiple-return correction
	// What the call spent, so that reusing the outcome keeps the loop's counters: its model
	// passes (generation and repair, journaled under their indexes), the steps they added and
	// the schema corrections among them.
	Passes int          `json:"passes,omitempty"`
	Steps  []ReasonStep `json:"steps,omitempty"`
	Fixes  int          `json:"fixes,omitempty"`
}

// turn processes the calls of one model turn in order; every call gets exactly one result.
func (l *loop) turn(ctx workflow.Context, resp protocol.ModelPassResult, calls []turnCall) ([]providers.ToolResult, error) {
	nReturns := returnCount(calls)
	done := map[string]providers.ToolResult{}
	evidence, fixed := false, false
	var results []providers.ToolResult
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
func (l *loop) turnMessages(resp protocol.ModelPassResult, done map[string]providers.ToolResult) []providers.Message {
	msgs := []providers.Message{{Role: providers.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Continuation: resp.Continuation}}
	for _, c := range resp.ToolCalls {
		r, ok := done[c.ID]
		content := "This call has not completed yet; its result will follow."
		if ok {
			content = r.Content
			if max := l.spec.MaxResultChars; max > 0 && len(content) > max {
				content = content[:max] + fmt.Sprintf("\n[truncated: %d more characters]", len(r.Content)-max)
			}
		}
		msgs = append(msgs, providers.Message{Role: providers.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: content, IsError: ok && r.IsError})
	}
	return msgs
}

// process handles one call, reusing its journaled outcome when there is one.
func (l *loop) process(ctx workflow.Context, resp protocol.ModelPassResult, calls []turnCall, tc turnCall,
	done map[string]providers.ToolResult, evidence, multipleReturns bool) (outcome, error) {
	okey := l.key + keyCall + tc.call.ID
	var out outcome
	if l.s.recorded(okey, &out) {
		// Runs recorded before outcomes kept their passes went on without them: so they do on
		// replay (the version is only asked where the two differ).
		if (out.Passes > 0 || out.Fixes > 0) && l.s.run.Version(ctx, versionReusedOutcomes) {
			for i := 0; i < out.Passes; i++ {
				var resp protocol.ModelPassResult
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
			out = outcome{Fix: true, Result: providers.ToolResult{ToolCallID: tc.call.ID, Name: tc.call.Name, IsError: true,
				Content: "MULTIPLE_TERMINAL_OUTPUTS: No terminal output was published. Select exactly one return contract and call it once."}}
			break
		}
		out, err = l.output(ctx, resp, calls, tc, done, evidence)
	}
	if err != nil {
		return out, err
	}
	out.Passes, out.Steps, out.Fixes = l.passes-passes, append([]ReasonStep(nil), l.res.Steps[steps:]...), l.schemaFixes-fixes
	l.s.record(okey, protocol.JournalEntry{Kind: entryReasonCall, Value: protocol.RawJSON(out), At: workflow.Now(ctx)})
	return out, nil
}

// ask handles an interrupt contract call (F3.8): a malformed request goes back to the model as
// an isError result (no human is asked, MaxRequests is not consumed); a valid one pauses the run
// with a custom interrupt and the validated answer becomes the tool result.
func (l *loop) ask(ctx workflow.Context, tc turnCall) (outcome, error) {
	c := l.spec.Interrupts[tc.contract]
	res := providers.ToolResult{ToolCallID: tc.call.ID, Name: tc.call.Name}
	if l.asked >= l.spec.MaxRequests {
		return outcome{}, &contracts.Error{Code: contracts.CodeReasonMaxRequests,
			Message: fmt.Sprintf("hooks.Reason reached interrupts.maxRequests (%d).", l.spec.MaxRequests),
			Details: map[string]any{"maxRequests": l.spec.MaxRequests}}
	}
	if issues := c.RequestSchema.ValidateJSON(tc.call.Arguments); len(issues) > 0 {
		e := &contracts.Error{Code: contracts.CodeSchemaValidation,
			Message: fmt.Sprintf("The request for %q does not match its schema; fix the arguments and call %s again", tc.contract, tc.call.Name), Issues: issues}
		f := contracts.FailureOf(e)
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
		Interrupt: &protocol.InterruptRecord{Contract: tc.contract, Request: tc.call.Arguments, Response: ans.Value}}, nil
}

// output handles an emit or return call (F3.7, F3.9): the drafted arguments are the value,
// unless the contract streams or the call follows completed results of the same turn — then
// the value is generated in a separate pass. The value is validated (and repaired) before
// anything is published.
func (l *loop) output(ctx workflow.Context, resp protocol.ModelPassResult, calls []turnCall, tc turnCall,
	done map[string]providers.ToolResult, evidence bool) (outcome, error) {
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
	var stream *protocol.StructuredStream
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
			stream = &protocol.StructuredStream{StreamID: streamID, DataType: c.SchemaID, SchemaID: c.SchemaID, SchemaVersion: c.SchemaVersion, Fields: c.StreamFields}
		} else {
			instruction = "Draft: " + string(tc.call.Arguments)
		}
		msgs := append(append([]providers.Message(nil), l.msgs...), l.turnMessages(resp, done)...)
		msgs = append(msgs, providers.Message{Role: providers.RoleUser, Content: fmt.Sprintf(
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
		v, err := l.validated(ctx, tc.contract, streamID, nil, false, c.Schema, value, providers.FinishReason{Unified: providers.FinishToolCalls},
			append(append([]providers.Message(nil), l.msgs...), l.turnMessages(resp, done)...))
		if err != nil {
			return outcome{}, err
		}
		value = v
	}
	l.s.run.Emit(contracts.Chunk{Type: contracts.ChunkStructuredData, Kind: contracts.StructuredFinal, StreamID: streamID,
		DataType: c.SchemaID, SchemaID: c.SchemaID, SchemaVersion: c.SchemaVersion, Node: l.s.node, ID: l.spec.ID, Data: value})
	em := &protocol.Emission{Contract: tc.contract, Data: value, StreamID: streamID}
	if tc.kind == kindEmit {
		em.Index = l.emissions
	}
	content, _ := json.Marshal(map[string]any{"emitted": true, "data": value})
	return outcome{Emission: em, Returned: tc.kind == kindReturn,
		Result: providers.ToolResult{ToolCallID: tc.call.ID, Name: tc.call.Name, Content: string(content)}}, nil
}

// invalidCall reports a malformed control call back to the model.
func (l *loop) invalidCall(tc turnCall, msg string) (outcome, error) {
	e := contracts.Errorf(contracts.CodeSchemaValidation, "%s: %s", tc.call.Name, msg)
	f := contracts.FailureOf(e)
	return outcome{Result: providers.ToolResult{ToolCallID: tc.call.ID, Name: tc.call.Name, IsError: true, Content: e.Error(), Failure: &f}}, nil
}

// controlTools are the tool definitions of the call's output and interrupt contracts.
func (l *loop) controlTools(returnsOnly bool) []providers.ToolDefinition {
	var out []providers.ToolDefinition
	add := func(set map[string]*contracts.OutputContract, prefix, streamPrefix, verb string) {
		for _, name := range workflow.DeterministicKeys(set) {
			c := set[name]
			if len(c.StreamFields) > 0 {
				out = append(out, providers.ToolDefinition{Name: streamPrefix + name,
					Description: fmt.Sprintf("%s %s: %s. Give an instruction; the value is generated and streamed separately.", verb, name, c.Description),
					InputSchema: json.RawMessage(`{"type":"object","properties":{"instruction":{"type":"string","minLength":1}},"required":["instruction"],"additionalProperties":false}`)})
				continue
			}
			out = append(out, providers.ToolDefinition{Name: prefix + name, Description: fmt.Sprintf("%s %s: %s", verb, name, c.Description), InputSchema: c.Schema.Raw()})
		}
	}
	if !returnsOnly {
		add(l.spec.EmitContracts, protocol.PrefixEmit, protocol.PrefixStreamEmit, "Publish")
		for _, name := range workflow.DeterministicKeys(l.spec.Interrupts) {
			c := l.spec.Interrupts[name]
			out = append(out, providers.ToolDefinition{Name: protocol.PrefixRequestInput + name,
				Description: c.Description + " Calling this pauses until a human answers; the answer is the tool result.",
				InputSchema: c.RequestSchema.Raw()})
		}
	}
	add(l.spec.ReturnContracts, protocol.PrefixReturn, protocol.PrefixStreamReturn, "Finish with")
	return out
}

func (l *loop) toolNames(set map[string]*contracts.OutputContract, prefix, streamPrefix string) []string {
	var out []string
	for _, name := range workflow.DeterministicKeys(set) {
		if len(set[name].StreamFields) > 0 {
			out = append(out, streamPrefix+name)
		} else {
			out = append(out, prefix+name)
		}
	}
	return out
}
