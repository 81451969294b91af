package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

// Price is what a model's tokens cost, per million, in the operator's currency
// (Options.Currency; no price is built in: prices change, the table is yours).
type Price = contracts.Price

// LoadPrices reads a price table: a JSON or YAML object of Price by "provider:model"
// ({"openai:gpt-4.1-mini": {"input": 0.4, "output": 1.6}}, or the same in YAML), the file
// KORTYX_PRICES names.
func LoadPrices(path string) (map[string]Price, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kortyx: the price table (KORTYX_PRICES): %w", err)
	}
	var t map[string]Price
	if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 && trimmed[0] == '{' {
		err = json.Unmarshal(b, &t)
	} else {
		err = yaml.Unmarshal(b, &t)
	}
	if err != nil {
		return nil, fmt.Errorf("kortyx: the price table %s (KORTYX_PRICES) must be a JSON or YAML object of {input, output, cacheRead?, cacheWrite?} per million tokens by \"provider:model\": %w", path, err)
	}
	for key, p := range t {
		if !strings.Contains(key, ":") {
			return nil, fmt.Errorf("kortyx: the price table %s (KORTYX_PRICES): the key %q must be \"provider:model\"", path, key)
		}
		for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("kortyx: the price table %s (KORTYX_PRICES): the prices of %q must be positive numbers per million tokens", path, key)
			}
		}
	}
	return t, nil
}

// runCost is a trace's cost: its tokens by model, priced by the table.
type runCost struct {
	// Total is the sum of the priced models' costs (0 without a table).
	Total float64 `json:"total"`
	// Models are the run's models by "provider:model", with their tokens and cost.
	Models map[string]modelCost `json:"models"`
	// Unpriced are the models of the run the table has no price for (their cost counts 0).
	Unpriced []string `json:"unpriced"`
	// Currency is the currency of the price table and of the action price (Options.Currency).
	Currency string `json:"currency"`
	// Actions are the billable Temporal actions counted from the runs' histories (an estimate:
	// queries and heartbeats are not in a history), ActionPrice the price per million actions
	// (Options.ActionPrice) and ActionsCost their cost. Total does not include it.
	Actions     int     `json:"actions"`
	ActionPrice float64 `json:"actionPrice"`
	ActionsCost float64 `json:"actionsCost"`
}

type modelCost struct {
	Usage providers.Usage `json:"usage"`
	Cost  float64         `json:"cost"`
}

// priced returns the cost of usage by model key under prices: each count the provider reported
// (input, output, cache read, cache write) times its price, per million.
func priced(usage map[string]providers.Usage, prices map[string]Price) runCost {
	c := runCost{Models: map[string]modelCost{}, Unpriced: []string{}}
	for key, u := range usage {
		p, ok := prices[key]
		if !ok {
			c.Unpriced = append(c.Unpriced, key)
			c.Models[key] = modelCost{Usage: u}
			continue
		}
		cost := p.Cost(u)
		c.Models[key] = modelCost{Usage: u, Cost: cost}
		c.Total += cost
	}
	slices.Sort(c.Unpriced)
	return c
}
