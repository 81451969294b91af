package execution

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/sdk/workflow"
)

// validated parses and validates an output value, repairing it with output-only passes as long
// as corrections and budget allow (seed 000). SchemaCorrections is one allowance for the whole
// call, shared by all its values. Truncated output is never repaired. A streamed value whose
// provisional fields were published (published) is invalidated before anything else.
func (l *loop) validated(ctx workflow.Context, contract, streamID string, stream *protocol.StructuredStream, published bool, schema *contracts.Schema,
	value json.RawMessage, finish providers.FinishReason, evidence []providers.Message) (json.RawMessage, error) {
	attempts := 0 // repairs of this value
	for {
		parsed, err := parseOutput(value, finish, schema)
		if err == nil {
			return parsed, nil
		}
		if stream != nil {
			// Runs recorded before passes reported their fields invalidated every streamed value
			// that failed: so they do on replay (the version is only asked where the two differ).
			if published || !l.s.run.Version(ctx, versionInvalidatePublished) {
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
			(attempts >= l.spec.SchemaCorrections || l.s.run.Version(ctx, versionSharedCorrections)) {
			return nil, &contracts.Error{Code: contracts.CodeReasonOutputSchemaCorrectionExhausted,
				Message: fmt.Sprintf("hooks.Reason: the value of %q is invalid and the call's %d schema correction(s) are used up; raise SchemaCorrections or fix the prompt.", orOutput(contract), l.schemaFixes),
				Details: map[string]any{"contract": orOutput(contract), "attempts": l.schemaFixes, "terminalReason": string(contracts.CodeOf(err))},
				Issues:  contracts.FailureOf(err).Issues, Err: err}
		}
		attempts++
		l.schemaFixes++
		msgs := append(append([]providers.Message(nil), evidence...), providers.Message{Role: providers.RoleUser, Content: repairPrompt(contract, schema, value, err)})
		if evidence == nil {
			msgs = append(append([]providers.Message(nil), l.msgs...), msgs...)
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
func parseOutput(value json.RawMessage, finish providers.FinishReason, schema *contracts.Schema) (json.RawMessage, error) {
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
		if finish.Unified == providers.FinishLength || strings.Contains(err.Error(), "unexpected end of JSON input") {
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
func (l *loop) generate(ctx workflow.Context, msgs []providers.Message, schema *contracts.Schema, stream *protocol.StructuredStream) (protocol.ModelPassResult, error) {
	if l.passes >= l.spec.MaxSteps {
		return protocol.ModelPassResult{}, &contracts.Error{Code: contracts.CodeReasonOutputBudgetExhausted,
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
	opts.ResponseFormat = &providers.ResponseFormat{Type: "json-schema", Schema: schema.Raw(), Name: "output"}
	in.Options = opts
	resp, err := l.pass(ctx, "output", in)
	if err != nil {
		return resp, err
	}
	l.res.Steps = append(l.res.Steps, ReasonStep{Index: len(l.res.Steps), Kind: "output", Text: resp.Text, Usage: resp.Usage, FinishReason: resp.FinishReason})
	return resp, nil
}
