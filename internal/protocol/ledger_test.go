package protocol

import (
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

func TestLedgerReserveAndSettle(t *testing.T) {
	s := &LedgerState{}
	b := contracts.ScopeBudget{MaxTokens: 100}
	g := s.Reserve("l", LedgerReserve{RunID: "a", Seq: 1, Tokens: 60, Budget: b})
	require.Equal(t, LedgerGrant{ID: "l", Seq: 1, Tokens: 60, UsedTokens: 60}, g)
	// The same reservation again (a retried activity) gets the same grant, and grants nothing more.
	require.Equal(t, g, s.Reserve("l", LedgerReserve{RunID: "a", Seq: 1, Tokens: 60, Budget: b}))
	// Another run gets what is left.
	require.Equal(t, LedgerGrant{ID: "l", Seq: 1, Tokens: 40, UsedTokens: 100}, s.Reserve("l", LedgerReserve{RunID: "b", Seq: 1, Tokens: 60, Budget: b}))
	require.Equal(t, 0, s.Reserve("l", LedgerReserve{RunID: "b", Seq: 2, Tokens: 10, Budget: b}).Tokens)
	// Run a ends having used 15 of its 60: the ledger counts 15 and frees the rest.
	s.Settle(LedgerSettle{RunID: "a", Tokens: 15})
	s.Settle(LedgerSettle{RunID: "a", Tokens: 15}) // a second settlement changes nothing
	used, _ := s.Used()
	require.Equal(t, 55, used)
	require.Equal(t, 1, s.Settled)
	// A forced grant goes past the budget and is counted as such.
	g = s.Reserve("l", LedgerReserve{RunID: "c", Seq: 1, Tokens: 70, Force: true, Budget: b})
	require.Equal(t, 70, g.Tokens)
	require.Equal(t, 25, s.OverTokens)
	v := s.View(LedgerStart{Scope: "agent", Key: "support"})
	require.Equal(t, 125, v.Tokens)
	require.Equal(t, []LedgerRunClaim{{RunID: "b", Tokens: 40}, {RunID: "c", Tokens: 70}}, v.Live)
}

func TestLedgerAskAllowed(t *testing.T) {
	a := LedgerAsk{Config: LedgerConfig{Budget: contracts.ScopeBudget{MaxTokens: 1000}}, RoomTokens: 50, Input: 100, Output: 4096}
	require.Equal(t, 0, a.Allowed(LedgerGrant{}), "the room does not hold the input")
	require.Equal(t, 1, a.Allowed(LedgerGrant{Tokens: 51}))
	require.Equal(t, 4096, a.Allowed(LedgerGrant{Tokens: 10000}))
	price := contracts.Price{Input: 1, Output: 2} // per million
	m := LedgerAsk{Config: LedgerConfig{Budget: contracts.ScopeBudget{MaxCost: 1}}, Input: 1000, Output: 4096, Price: &price}
	require.Equal(t, 0, m.Allowed(LedgerGrant{Cost: 0.0005}))
	require.Equal(t, 500, m.Allowed(LedgerGrant{Cost: 0.002}), "0.001 for the input, 0.001 buys 500 output tokens")
}

func TestLedgerIDs(t *testing.T) {
	require.Equal(t, "2026-12", LedgerWindow(contracts.PeriodMonth, time.Date(2026, 12, 6, 23, 0, 0, 0, time.UTC)))
	require.Equal(t, "2026-12-06", LedgerWindow(contracts.PeriodDay, time.Date(2026, 12, 6, 23, 0, 0, 0, time.UTC)))
	require.Equal(t, "", LedgerWindow("", time.Now()))
	id := LedgerID("q1", "tenant", "org/alice", "2026-12")
	require.Equal(t, "kortyx-ledger/q1/tenant/org%2Falice/2026-12", id)
	long := LedgerID("q1", "tenant", string(make([]byte, 300)), "")
	require.Len(t, long, len("kortyx-ledger/q1/tenant/sha256-")+64)
}
