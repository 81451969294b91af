package execution

import (
	"encoding/json"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
)

// ReasonStep is one model pass of a hooks.Reason call, with the tool calls it requested and
// their results.
type ReasonStep struct {
	Index int `json:"index"`
	// Kind is "" for a pass of the tool loop and "output" for a pass that generates or repairs
	// the value of an output contract (or of OutputSchema).
	Kind         string                 `json:"kind,omitempty"`
	Text         string                 `json:"text,omitempty"`
	ToolCalls    []providers.ToolCall   `json:"toolCalls,omitempty"`
	ToolResults  []providers.ToolResult `json:"toolResults,omitempty"`
	Usage        providers.Usage        `json:"usage"`
	FinishReason providers.FinishReason `json:"finishReason"`
}

// ReasonResult is the result of a hooks.Reason call (spec F3.5).
type ReasonResult struct {
	ID               string                 `json:"id,omitempty"`
	OpID             string                 `json:"opId"`
	Text             string                 `json:"text"`
	Usage            providers.Usage        `json:"usage"`
	FinishReason     providers.FinishReason `json:"finishReason"`
	ProviderMetadata map[string]any         `json:"providerMetadata,omitempty"`
	Warnings         []providers.Warning    `json:"warnings,omitempty"`
	ToolCalls        []providers.ToolCall   `json:"toolCalls,omitempty"`
	ToolResults      []providers.ToolResult `json:"toolResults,omitempty"`
	Steps            []ReasonStep           `json:"steps"`
	// Emissions are the values published through emit contracts, in order.
	Emissions []protocol.Emission `json:"emissions,omitempty"`
	// Returned is the value of the return contract that finished the call.
	Returned *protocol.Emission `json:"returned,omitempty"`
	// InterruptHistory lists the questions asked through interrupt contracts and their answers.
	InterruptHistory []protocol.InterruptRecord `json:"interruptHistory,omitempty"`
	// Output is the validated JSON answer when OutputSchema was given.
	Output json.RawMessage `json:"output,omitempty"`
}
