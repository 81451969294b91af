package contracts

// Limits bound the work of a run and all its children together (spec F5.7); 0 means no limit.
// Each unit is reserved before the work is dispatched (a failed attempt consumes its unit; a
// result reused from the journal consumes none). Reaching a limit pauses the run with a
// "Limit reached — Continue?" question; Continue gives a fresh allowance.
type Limits struct {
	MaxNodeExecutions   int `json:"maxNodeExecutions,omitempty"`
	MaxModelPasses      int `json:"maxModelPasses,omitempty"`
	MaxToolCalls        int `json:"maxToolCalls,omitempty"`
	MaxChildInvocations int `json:"maxChildInvocations,omitempty"`
}
