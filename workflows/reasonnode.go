package workflows

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

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
//
// Params are validated when the workflow is added to the registry.
const ReasonNode = "kortyx.reason"

// reasonParams are the params of a [ReasonNode].
type reasonParams struct {
	ID              string                `json:"id"`
	Model           string                `json:"model"`
	ModelOptions    map[string]any        `json:"modelOptions"`
	System          string                `json:"system"`
	Input           string                `json:"input"`
	Tools           []string              `json:"tools"`
	MCP             []contracts.MCPServer `json:"mcp"`
	MaxSteps        int                   `json:"maxSteps"`
	EmitTools       json.RawMessage       `json:"emitTools"`
	Approval        json.RawMessage       `json:"approval"`
	Stream          *bool                 `json:"stream"`
	Emit            *bool                 `json:"emit"`
	Temperature     *float64              `json:"temperature"`
	MaxOutputTokens int                   `json:"maxOutputTokens"`
	Output          string                `json:"output"`
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
    "output": {"type": "string", "minLength": 1}
  },
  "$defs": {"switch": {"oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "string"}}]}}
}`)

// reasonNode is the node function of [ReasonNode].
func reasonNode(ctx workflow.Context, in NodeInput) (NodeResult, error) {
	var p reasonParams
	if err := in.DecodeParams(&p); err != nil {
		return NodeResult{}, contracts.Errorf(contracts.CodeInvalidDefinition, "kortyx.reason params: %v", err)
	}
	input := in.Text()
	if p.Input != "" {
		rc, err := hooks.RuntimeContext[map[string]any](ctx)
		if err != nil {
			return NodeResult{}, err
		}
		if input, err = Render(p.Input, map[string]any{"input": in.Input, "params": in.Params, "context": rc}); err != nil {
			return NodeResult{}, err
		}
	}
	emitTools, err := toSwitch(p.EmitTools)
	if err != nil {
		return NodeResult{}, err
	}
	approval, err := toSwitch(p.Approval)
	if err != nil {
		return NodeResult{}, err
	}
	model := contracts.Model(p.Model)
	model.Options = p.ModelOptions
	res, err := hooks.Reason(ctx, hooks.ReasonOptions{
		ID:       p.ID,
		Model:    model,
		System:   p.System,
		Input:    input,
		Options:  contracts.CallOptions{Temperature: p.Temperature, MaxOutputTokens: p.MaxOutputTokens},
		Silent:   p.Emit != nil && !*p.Emit,
		Buffered: p.Stream != nil && !*p.Stream,
		Tools:    p.Tools,
		MCP:      p.MCP,
		ToolExecution: hooks.ToolExecution{
			MaxSteps: p.MaxSteps, Emit: emitTools, Approval: approval,
		},
	})
	if err != nil {
		return NodeResult{}, err
	}
	out := p.Output
	if out == "" {
		out = "answer"
	}
	return NodeResult{Data: map[string]any{out: res.Text}}, nil
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

// Render fills a template: every "{{ path }}" is replaced by the value at path in vars (dotted
// keys, numeric array indexes); strings are inserted as they are, other values as JSON, missing
// values as "". A path whose first segment is not in vars is an error (a typo, not data).
func Render(tpl string, vars map[string]any) (string, error) {
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
