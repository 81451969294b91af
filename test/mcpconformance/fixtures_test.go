package mcpconformance_test

import (
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/workflow"
)

// The fixture tools the suite's server scenarios call, served as Kortyx agents: each is what
// an agent of that kind does on this wire (a node's message, a failed node, a model's streamed
// text, a question), so that the scenarios exercise the MCP mapping, not a stand-in.

// fixtureModel is the fake model id the streaming fixtures call; fixtureText is its answer,
// streamed in deltas (progress notifications, and log messages at debug).
const (
	fixtureModel = "conformance"
	fixtureText  = "Tool execution started. Tool processing data. Tool execution completed."
)

// noArguments is the input schema of a fixture called without arguments.
const noArguments = `{"type":"object","properties":{}}`

// fixtureSchemas are the response schemas of the fixture questions, as the scenarios describe
// them: test_elicitation's, SEP-1034's defaults of every primitive type, SEP-1330's five enums.
const (
	userSchema     = `{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`
	defaultsSchema = `{"type":"object","properties":{
		"name":{"type":"string","default":"John Doe"},
		"age":{"type":"integer","default":30},
		"score":{"type":"number","default":95.5},
		"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
		"verified":{"type":"boolean","default":true}}}`
	enumsSchema = `{"type":"object","properties":{
		"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
		"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
		"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
		"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
		"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`
	// schema2020 is json-schema-2020-12's input schema (SEP-1613, SEP-2106).
	schema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
		"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
		"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
		"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},
		"additionalProperties":false}`
)

// registerFixtures adds the fixture agents to reg.
func registerFixtures(reg *workflows.Registry) error {
	say := func(text string) workflows.NodeFunc {
		return func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{UI: &workflows.UI{Message: text}}, nil
		}
	}
	stream := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "say", Model: providers.Model(fake.ID + ":" + fixtureModel), Input: "Run."})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: res.Text}}, nil
	}
	ask := func(id, question, schema, reply string) workflows.NodeFunc {
		return func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			q := question
			if q == "" { // the question is the call's "message" argument
				var args struct {
					Message string `json:"message"`
				}
				if err := in.Decode(&args); err != nil {
					return workflows.NodeResult{}, err
				}
				q = args.Message
			}
			a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: id, Kind: contracts.InterruptCustom, Question: q,
				Request: map[string]any{"question": q}, SchemaID: id, ResponseSchema: contracts.MustCompileSchema(schema)})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{UI: &workflows.UI{Message: reply + string(a.Value)}}, nil
		}
	}
	return reg.Add(
		agent("test_simple_text", "Returns a text (tools-call-simple-text).", noArguments, say("This is a simple text response for testing.")),
		agent("test_error_handling", "Fails (tools-call-error).", noArguments, func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{}, contracts.Errorf(contracts.CodeDomainError, "This tool intentionally returns an error for testing.")
		}),
		agent("test_tool_with_progress", "Streams a model's text (tools-call-with-progress).", noArguments, stream),
		agent("test_tool_with_logging", "Streams a model's text (tools-call-with-logging).", noArguments, stream),
		agent("test_elicitation", "Asks for a user name and email (tools-call-elicitation).",
			`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, ask("user", "", userSchema, "User response: action=accept, content=")),
		agent("test_elicitation_sep1034_defaults", "Asks with defaults (elicitation-sep1034-defaults).", noArguments,
			ask("defaults", "Confirm the defaults.", defaultsSchema, "Elicitation completed: action=accept, content=")),
		agent("test_elicitation_sep1330_enums", "Asks with the five enum kinds (elicitation-sep1330-enums).", noArguments,
			ask("enums", "Pick options.", enumsSchema, "Elicitation completed: action=accept, content=")),
		agent("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", schema2020, say("ok")),
	)
}

// agent is a one-node agent with an input schema.
func agent(id, description, input string, run workflows.NodeFunc) *workflows.Definition {
	return &workflows.Definition{ID: id, Version: "1", Description: description, InputSchema: contracts.MustCompileSchema(input),
		Nodes: map[string]workflows.Node{"run": {Run: run}}, Edges: []workflows.Edge{{From: workflows.Start, To: "run"}}}
}

// fixtureResponder answers the streaming fixtures' model passes and passes the others on.
func fixtureResponder(next fake.Responder) fake.Responder {
	return func(req providers.Request) fake.Turn {
		if req.Model == fixtureModel {
			return fake.Text(fixtureText)
		}
		return next(req)
	}
}
