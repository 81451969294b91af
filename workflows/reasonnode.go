package workflows

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"go.temporal.io/sdk/workflow"
)

// ReasonNode is the built-in node kind of declarative agents: a node whose run is
// "kortyx.reason" calls [hooks.Reason] as its params say, and puts the answer in its data.
//
//	nodes:
//	  agent:
//	    run: kortyx.reason
//	    params:
//	      model: openai:gpt-4.1-mini      # provider:model; "" uses the worker's default
//	      system: You are a support agent. Look orders up before answering.
//	      input: "{{input.message}}"      # template over input and context; default: the node input text
//	      tools: [lookup_order, refund]   # tools registered on the worker
//	      mcp: [{url: "http://localhost:8931/mcp", include: ["search_*"]}]
//	      maxSteps: 4
//	      emitTools: true                 # true, false, or a list of tool names
//	      approval: [refund]              # true, false, or a list of tool names
//	      stream: true                    # default true
//	      emit: true                      # default true: publish text chunks
//	      temperature: 0.2
//	      maxOutputTokens: 800
//	      output: answer                  # data key of the answer text (default "answer")
//	      outputs: {emit: {...}, return: {...}, maxEmissions: 16}   # output contracts, schemas inline
//	      interrupts: {contracts: {...}, mode: optional, maxRequests: 1}
//	      outputSchema: {type: object, ...}
//	      schemaCorrections: 1
//	      missingReturnCorrections: 0
//	      maxFailures: 5                  # retryable provider errors per model pass (-1: no cap)
//	      maxToolFailures: 3              # retryable errors per tool call (-1: no cap)
//
// Params are validated, and their schemas compiled, when the workflow is added to the registry;
// tools are checked against the worker's tools when the registry knows them
// ([Registry.SetToolNames]).
// The node's data gets the answer text under output, and, when present, the returned value
// under "<output>Returned", emissions under "<output>Emissions" and the OutputSchema value under
// "<output>Output".
const ReasonNode = "kortyx.reason"

// reasonParams are the params of a [ReasonNode].
type reasonParams struct {
	ID              string               `json:"id"`
	Model           string               `json:"model"`
	ModelOptions    map[string]any       `json:"modelOptions"`
	System          string               `json:"system"`
	Input           string               `json:"input"`
	Tools           []string             `json:"tools"`
	MCP             []protocol.MCPServer `json:"mcp"`
	MaxSteps        int                  `json:"maxSteps"`
	EmitTools       json.RawMessage      `json:"emitTools"`
	Approval        json.RawMessage      `json:"approval"`
	Stream          *bool                `json:"stream"`
	Emit            *bool                `json:"emit"`
	Temperature     *float64             `json:"temperature"`
	MaxOutputTokens int                  `json:"maxOutputTokens"`
	Output          string               `json:"output"`
	MaxFailures     int                  `json:"maxFailures"`
	MaxToolFailures int                  `json:"maxToolFailures"`

	Outputs *struct {
		Emit         map[string]outputParams `json:"emit"`
		Return       map[string]outputParams `json:"return"`
		MaxEmissions int                     `json:"maxEmissions"`
	} `json:"outputs"`
	Interrupts *struct {
		Contracts   map[string]interruptParams `json:"contracts"`
		Mode        string                     `json:"mode"`
		MaxRequests int                        `json:"maxRequests"`
	} `json:"interrupts"`
	OutputSchema             json.RawMessage `json:"outputSchema"`
	SchemaCorrections        *int            `json:"schemaCorrections"`
	MissingReturnCorrections int             `json:"missingReturnCorrections"`
}

type outputParams struct {
	Description   string          `json:"description"`
	SchemaID      string          `json:"schemaId"`
	SchemaVersion string          `json:"schemaVersion"`
	Schema        json.RawMessage `json:"schema"`
	Stream        *struct {
		Fields map[string]contracts.StructuredKind `json:"fields"`
	} `json:"stream"`
}

type interruptParams struct {
	Description    string          `json:"description"`
	SchemaID       string          `json:"schemaId"`
	SchemaVersion  string          `json:"schemaVersion"`
	RequestSchema  json.RawMessage `json:"requestSchema"`
	ResponseSchema json.RawMessage `json:"responseSchema"`
}

var reasonParamsSchema = contracts.MustCompileSchema(`{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "id": {"type": "string"},
    "model": {"type": "string"},
    "modelOptions": {"type": "object"},
    "system": {"type": "string"},
    "input": {"type": "string"},
    "tools": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true},
    "mcp": {"type": "array", "items": {
      "type": "object", "additionalProperties": false, "required": ["url"],
      "properties": {
        "url": {"type": "string", "minLength": 1},
        "include": {"type": "array", "items": {"type": "string"}},
        "exclude": {"type": "array", "items": {"type": "string"}},
        "prefix": {"type": "string"}
      }}},
    "maxSteps": {"type": "integer", "minimum": 1},
    "emitTools": {"$ref": "#/$defs/switch"},
    "approval": {"$ref": "#/$defs/switch"},
    "stream": {"type": "boolean"},
    "emit": {"type": "boolean"},
    "temperature": {"type": "number", "minimum": 0},
    "maxOutputTokens": {"type": "integer", "minimum": 1},
    "output": {"type": "string", "minLength": 1},
    "outputs": {"type": "object", "additionalProperties": false, "properties": {
      "emit": {"type": "object", "additionalProperties": {"$ref": "#/$defs/output"}},
      "return": {"type": "object", "additionalProperties": {"$ref": "#/$defs/output"}},
      "maxEmissions": {"type": "integer", "minimum": 1}}},
    "interrupts": {"type": "object", "additionalProperties": false, "required": ["contracts"], "properties": {
      "contracts": {"type": "object", "minProperties": 1, "additionalProperties": {"$ref": "#/$defs/interrupt"}},
      "mode": {"enum": ["optional", "required"]},
      "maxRequests": {"type": "integer", "minimum": 1}}},
    "outputSchema": {"type": "object"},
    "schemaCorrections": {"type": "integer", "minimum": 0, "maximum": 10},
    "missingReturnCorrections": {"type": "integer", "minimum": 0},
    "maxFailures": {"type": "integer", "minimum": -1},
    "maxToolFailures": {"type": "integer", "minimum": -1}
  },
  "$defs": {
    "switch": {"oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "string"}}]},
    "output": {"type": "object", "additionalProperties": false, "required": ["description", "schemaId", "schemaVersion", "schema"],
      "properties": {
        "description": {"type": "string", "minLength": 1},
        "schemaId": {"type": "string", "minLength": 1},
        "schemaVersion": {"type": "string", "minLength": 1},
        "schema": {"type": "object"},
        "stream": {"type": "object", "additionalProperties": false, "required": ["fields"], "properties": {
          "fields": {"type": "object", "minProperties": 1, "additionalProperties": {"enum": ["set", "append", "text-delta"]}}}}}},
    "interrupt": {"type": "object", "additionalProperties": false, "required": ["description", "schemaId", "schemaVersion", "requestSchema", "responseSchema"],
      "properties": {
        "description": {"type": "string", "minLength": 1},
        "schemaId": {"type": "string", "minLength": 1},
        "schemaVersion": {"type": "string", "minLength": 1},
        "requestSchema": {"type": "object"},
        "responseSchema": {"type": "object"}}}
  }
}`)

// bindReason parses the params of a [ReasonNode] once, when its workflow is added: schemas are
// compiled here, outside workflow code, and the node function closes over the result. Params
// that would fail every run are refused here, each problem with its path: outputSchema with
// outputs, outputs without a contract, a streamed contract in a call that does not stream, a
// tool with a reserved prefix, and a tool the worker does not have (when tools, the worker's
// tool names, is not nil).
func bindReason(raw map[string]any, tools map[string]bool) (NodeFunc, error) {
	var p reasonParams
	if err := convert(raw, &p); err != nil {
		return nil, err
	}
	emitTools, err := toSwitch(p.EmitTools)
	if err != nil {
		return nil, err
	}
	approval, err := toSwitch(p.Approval)
	if err != nil {
		return nil, err
	}
	model := providers.Model(p.Model)
	model.Options = p.ModelOptions
	opts := hooks.ReasonOptions{
		ID:       p.ID,
		Model:    model,
		System:   p.System,
		Options:  providers.CallOptions{Temperature: p.Temperature, MaxOutputTokens: p.MaxOutputTokens},
		Silent:   p.Emit != nil && !*p.Emit,
		Buffered: p.Stream != nil && !*p.Stream,
		Tools:    p.Tools,
		MCP:      p.MCP,
		ToolExecution: hooks.ToolExecution{
			MaxSteps: p.MaxSteps, Emit: emitTools, Approval: approval, MissingReturnCorrections: p.MissingReturnCorrections,
			MaxFailures: p.MaxToolFailures,
		},
		MaxFailures:       p.MaxFailures,
		SchemaCorrections: p.SchemaCorrections,
	}
	var issues []contracts.Issue
	invalid := func(path []any, code, format string, args ...any) {
		issues = append(issues, contracts.Issue{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	for i, t := range p.Tools {
		prefix := protocol.ReservedToolPrefix(t)
		if prefix != "" {
			invalid([]any{"tools", i}, issueInvalidValue, "tool %q uses the reserved prefix %s of output and interrupt contracts: rename the tool", t, prefix)
		}
		if prefix == "" && tools != nil && !tools[t] {
			invalid([]any{"tools", i}, issueUnknownTool, "tool %q is not one of the worker's tools (%s): register it on the worker or fix the name", t, toolList(tools))
		}
	}
	streaming := !opts.Buffered
	if v, ok := model.Options["streaming"].(bool); ok && !v {
		streaming = false
	}
	if o := p.Outputs; o != nil {
		if len(o.Emit)+len(o.Return) == 0 {
			invalid([]any{"outputs"}, issueInvalidValue, "outputs needs at least one emit or return contract")
		}
		if len(p.OutputSchema) > 0 {
			invalid([]any{"outputSchema"}, issueInvalidValue, "outputSchema cannot be combined with outputs: return the final value through a return contract (outputs.return), or drop outputs")
		}
		for kind, set := range map[string]map[string]outputParams{"emit": o.Emit, "return": o.Return} {
			for name, op := range set {
				if op.Stream != nil && len(op.Stream.Fields) > 0 && !streaming {
					invalid([]any{"outputs", kind, name, "stream"}, issueInvalidValue,
						"contract %q streams its fields, which needs a streaming call: remove stream: false (or modelOptions.streaming: false), or the contract's stream", name)
				}
			}
		}
	}
	compile := func(path []any, doc json.RawMessage) *contracts.Schema {
		s, err := contracts.CompileSchema(doc)
		if err != nil {
			issues = append(issues, contracts.Issue{Path: path, Code: "invalid_schema", Message: contracts.FailureOf(err).Message})
		}
		return s
	}
	if len(p.OutputSchema) > 0 {
		opts.OutputSchema = compile([]any{"outputSchema"}, p.OutputSchema)
	}
	if o := p.Outputs; o != nil {
		outs := &hooks.Outputs{MaxEmissions: o.MaxEmissions}
		build := func(kind string, in map[string]outputParams) map[string]*contracts.OutputContract {
			out := map[string]*contracts.OutputContract{}
			for _, name := range sortedMapKeys(in) {
				op := in[name]
				path := []any{"outputs", kind, name}
				schema := compile(append(path, "schema"), op.Schema)
				if schema == nil {
					continue
				}
				var fields map[string]contracts.StructuredKind
				if op.Stream != nil {
					fields = op.Stream.Fields
				}
				c, err := contracts.NewOutputContract(op.Description, op.SchemaID, op.SchemaVersion, schema, fields)
				if err == nil {
					prefix := map[bool]map[string]string{false: {"emit": protocol.PrefixEmit, "return": protocol.PrefixReturn},
						true: {"emit": protocol.PrefixStreamEmit, "return": protocol.PrefixStreamReturn}}[len(c.StreamFields) > 0][kind]
					err = protocol.CheckContractName(name, prefix)
				}
				if err != nil {
					issues = append(issues, contracts.Issue{Path: path, Code: issueInvalidValue, Message: contracts.FailureOf(err).Message})
					continue
				}
				out[name] = c
			}
			return out
		}
		outs.Emit, outs.Return = build("emit", o.Emit), build("return", o.Return)
		opts.Outputs = outs
	}
	if in := p.Interrupts; in != nil {
		ints := &hooks.Interrupts{Mode: in.Mode, MaxRequests: in.MaxRequests, Contracts: map[string]*contracts.InterruptContract{}}
		for _, name := range sortedMapKeys(in.Contracts) {
			ip := in.Contracts[name]
			path := []any{"interrupts", "contracts", name}
			req, resp := compile(append(path, "requestSchema"), ip.RequestSchema), compile(append(path, "responseSchema"), ip.ResponseSchema)
			if req == nil || resp == nil {
				continue
			}
			c, err := contracts.NewInterruptContract(ip.Description, ip.SchemaID, ip.SchemaVersion, req, resp)
			if err == nil {
				err = protocol.CheckContractName(name, protocol.PrefixRequestInput)
			}
			if err != nil {
				issues = append(issues, contracts.Issue{Path: path, Code: issueInvalidValue, Message: contracts.FailureOf(err).Message})
				continue
			}
			ints.Contracts[name] = c
		}
		opts.Interrupts = ints
	}
	if len(issues) > 0 {
		return nil, &contracts.Error{Code: contracts.CodeInvalidDefinition, Message: "kortyx.reason params are invalid", Issues: issues}
	}
	output := p.Output
	if output == "" {
		output = "answer"
	}
	input := p.Input
	return func(ctx workflow.Context, in NodeInput) (NodeResult, error) {
		call := opts
		call.Input = in.Text()
		if input != "" {
			rc, err := hooks.RuntimeContext[map[string]any](ctx)
			if err != nil {
				return NodeResult{}, err
			}
			if call.Input, err = render(input, map[string]any{"input": in.Input, "params": in.Params, "context": rc}); err != nil {
				return NodeResult{}, err
			}
		}
		res, err := hooks.Reason(ctx, call)
		if err != nil {
			return NodeResult{}, err
		}
		data := map[string]any{output: res.Text}
		if res.Returned != nil {
			data[output+"Returned"] = jsonValue(res.Returned.Data)
		}
		if len(res.Emissions) > 0 {
			ems := make([]any, len(res.Emissions))
			for i, e := range res.Emissions {
				ems[i] = map[string]any{"contract": e.Contract, "data": jsonValue(e.Data)}
			}
			data[output+"Emissions"] = ems
		}
		if len(res.Output) > 0 {
			data[output+"Output"] = jsonValue(res.Output)
		}
		return NodeResult{Data: data}, nil
	}, nil
}

func toolList(tools map[string]bool) string {
	if len(tools) == 0 {
		return "none"
	}
	return strings.Join(sortedMapKeys(tools), ", ")
}

func jsonValue(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

func toSwitch(raw json.RawMessage) (hooks.Switch, error) {
	if len(raw) == 0 {
		return hooks.Switch{}, nil
	}
	var on bool
	if json.Unmarshal(raw, &on) == nil {
		return hooks.Switch{On: on}, nil
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		return hooks.Switch{}, contracts.Errorf(contracts.CodeInvalidDefinition, "kortyx.reason: a tool switch must be true, false or a list of tool names")
	}
	return hooks.Only(names...), nil
}

// render fills a template: every "{{ path }}" is replaced by the value at path in vars (dotted
// keys, numeric array indexes); strings are inserted as they are, other values as JSON, missing
// values as "". A path whose first segment is not in vars is an error (a typo, not data).
func render(tpl string, vars map[string]any) (string, error) {
	var b strings.Builder
	rest := tpl
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return "", contracts.Errorf(contracts.CodeInvalidDefinition, "template %q: \"{{\" without \"}}\"", tpl)
		}
		b.WriteString(rest[:i])
		path := strings.TrimSpace(rest[i+2 : i+j])
		v, err := lookup(vars, path)
		if err != nil {
			return "", contracts.Errorf(contracts.CodeInvalidDefinition, "template %q: %v", tpl, err)
		}
		switch t := v.(type) {
		case nil:
		case string:
			b.WriteString(t)
		default:
			enc, err := json.Marshal(t)
			if err != nil {
				return "", err
			}
			b.Write(enc)
		}
		rest = rest[i+j+2:]
	}
}

func lookup(vars map[string]any, path string) (any, error) {
	segs := strings.Split(path, ".")
	root, ok := vars[segs[0]]
	if !ok {
		return nil, fmt.Errorf("unknown name %q (use %s)", segs[0], strings.Join(workflow.DeterministicKeys(vars), ", "))
	}
	cur := root
	for _, s := range segs[1:] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[s]
		case []any:
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n >= len(c) {
				return nil, nil
			}
			cur = c[n]
		default:
			return nil, nil
		}
	}
	return cur, nil
}
