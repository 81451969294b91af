package contracts_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// A pass's cost: cached input at the cache prices and the rest of the input at the input
// price (Input counts both); reasoning reported apart from the output (Total above
// Input+Output) at the output price.
func TestPriceCost(t *testing.T) {
	p := contracts.Price{Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 2.5}
	require.InDelta(t, (100*2+10*8)/1e6, p.Cost(contracts.Usage{Input: 100, Output: 10, Total: 110}), 1e-15)
	require.InDelta(t, (60*2+30*0.5+10*2.5+10*8)/1e6, p.Cost(contracts.Usage{Input: 100, Output: 10, Total: 110, CacheRead: 30, CacheWrite: 10}), 1e-15)
	require.InDelta(t, (100*2+(10+40)*8)/1e6, p.Cost(contracts.Usage{Input: 100, Output: 10, Reasoning: 40, Total: 150}), 1e-15)
	require.InDelta(t, (100*2+10*8)/1e6, p.Cost(contracts.Usage{Input: 100, Output: 10, Reasoning: 40, Total: 110}), 1e-15, "reasoning inside the output")
}
