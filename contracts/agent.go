package contracts

// Agent is what a wire shows of an agent it serves: an A2A card, an MCP tool, an entry of a
// catalog. A program's registry lists them (workflows.Registry.Agents) and the session service
// hands them to the wires (sessions.Options.Agents).
type Agent struct {
	// ID is the agent's id: the workflow id a turn names.
	ID string `json:"id"`
	// Description says what the agent does ("" when its definition has none).
	Description string `json:"description,omitempty"`
	// Version is the definition's version.
	Version string `json:"version,omitempty"`
	// InputSchema validates a run's input, OutputSchema its final data (nil: none).
	InputSchema  *Schema `json:"inputSchema,omitempty"`
	OutputSchema *Schema `json:"outputSchema,omitempty"`
}
