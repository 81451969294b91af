package contracts

// Price is what a model's tokens cost, per million, in the operator's currency. No price is
// built in: prices change, the table is the operator's (a worker's
// workflows.Registry.SetPrices, the file KORTYX_PRICES names).
type Price struct {
	Input      float64 `json:"input" yaml:"input"`
	Output     float64 `json:"output" yaml:"output"`
	CacheRead  float64 `json:"cacheRead,omitempty" yaml:"cacheRead,omitempty"`
	CacheWrite float64 `json:"cacheWrite,omitempty" yaml:"cacheWrite,omitempty"`
}

// Cost is what u costs at p, per million tokens: the input tokens read from or written to the
// provider's cache at their prices, the rest of the input (Input counts them all, as the
// providers normalize it) at the input price, and the output at the output price, with
// reasoning tokens a provider reports apart from its output (Total above Input+Output).
func (p Price) Cost(u Usage) float64 {
	in := max(u.Input-u.CacheRead-u.CacheWrite, 0)
	out := u.Output
	if u.Total > u.Input+u.Output {
		out = u.Total - u.Input
	}
	return (float64(in)*p.Input + float64(out)*p.Output + float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite) / 1e6
}

// Spend is what a run's model passes spent, its children's included: tokens, and their cost
// in Currency when the run has a money budget ([Limits].MaxCost); and the budget it ran under
// (MaxTokens, MaxCost, with the allowances Continue gave; 0: none).
type Spend struct {
	Tokens    int     `json:"tokens"`
	Cost      float64 `json:"cost,omitempty"`
	Currency  string  `json:"currency,omitempty"`
	MaxTokens int     `json:"maxTokens,omitempty"`
	MaxCost   float64 `json:"maxCost,omitempty"`
}

// BudgetStatus is a run's spend against its budget, as a budget chunk (a status chunk at the
// warning share, a limit-reached chunk when a pass cannot be granted) and the budget question's
// meta show it.
type BudgetStatus struct {
	// Scope is "run": the run and its children.
	Scope string `json:"scope"`
	// Limit is the budget a pass could not be granted under ("maxTokens" or "maxCost"), or the
	// one that reached its warning share.
	Limit string `json:"limit,omitempty"`
	// Tokens and Cost are what the settled passes spent; MaxTokens and MaxCost the budget
	// (with the allowances Continue gave).
	Tokens    int     `json:"tokens"`
	MaxTokens int     `json:"maxTokens,omitempty"`
	Cost      float64 `json:"cost"`
	MaxCost   float64 `json:"maxCost,omitempty"`
	Currency  string  `json:"currency,omitempty"`
	// Reserve is the least the pass that could not be granted needs (its input and one output
	// token), in the limit's unit (tokens, or money).
	Reserve float64 `json:"reserve,omitempty"`
}
