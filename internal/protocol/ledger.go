package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"math"
	"net/url"
	"slices"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
)

// A shared budget's ledger (docs/budgets.md): one workflow per agent or tenant and period
// keeps what the runs under it were granted and spent. A run reserves a batch from it inside a
// model pass's activity (an update, deduplicated by the run's reservation number, so a retried
// activity gets the grant it got before) and spends the batch pass by pass in its own state;
// it settles what it spent with one signal when it ends.
const (
	LedgerWorkflowName  = "kortyx.Ledger"
	LedgerReserveUpdate = "kortyx.Ledger.Reserve"
	LedgerSettleSignal  = "kortyx.Ledger.Settle"
	LedgerStateQuery    = "kortyx.Ledger.State"
	// LedgerIDPrefix starts every ledger's workflow id:
	// "kortyx-ledger/<task queue>/<scope>/<key>[/<window>]".
	LedgerIDPrefix = "kortyx-ledger/"
)

// LedgerConfig is a shared budget a run is under: its scope, key and budget.
type LedgerConfig struct {
	Scope  string                `json:"scope"`
	Key    string                `json:"key"`
	Budget contracts.ScopeBudget `json:"budget"`
}

// LedgersCost reports whether one of configs counts money.
func LedgersCost(configs []LedgerConfig) bool {
	for _, c := range configs {
		if c.Budget.MaxCost > 0 {
			return true
		}
	}
	return false
}

// maxLedgerKey is the longest key kept as it is in a ledger's workflow id; a longer one is
// replaced by its SHA-256.
const maxLedgerKey = 200

// LedgerWindow is the period of budget b that t falls in ("2026-12", "2026-12-06"; "": b has
// no period), in UTC.
func LedgerWindow(period string, t time.Time) string {
	switch period {
	case contracts.PeriodDay:
		return t.UTC().Format("2006-01-02")
	case contracts.PeriodMonth:
		return t.UTC().Format("2006-01")
	}
	return ""
}

// LedgerID is the workflow id of the ledger of scope's key in window, for the runs of task
// queue queue (the ledger runs there: deployments on other task queues of the namespace keep
// ledgers of their own).
func LedgerID(queue, scope, key, window string) string {
	if len(key) > maxLedgerKey {
		sum := sha256.Sum256([]byte(key))
		key = "sha256-" + hex.EncodeToString(sum[:])
	}
	id := LedgerIDPrefix + url.PathEscape(queue) + "/" + scope + "/" + url.PathEscape(key)
	if window != "" {
		id += "/" + window
	}
	return id
}

// LedgerHold is a run's share of one ledger: what the ledger granted it so far and what its
// passes used of that (settled passes, and the holds of passes in flight).
type LedgerHold struct {
	Config LedgerConfig `json:"config"`
	ID     string       `json:"id"`
	Window string       `json:"window,omitempty"`
	// Seq numbers the run's reservations at this ledger (the update's deduplication).
	Seq           int     `json:"seq,omitempty"`
	GrantedTokens int     `json:"grantedTokens,omitempty"`
	GrantedCost   float64 `json:"grantedCost,omitempty"`
	// UsedTokens and UsedCost are the settled passes' usage and the holds in flight.
	UsedTokens int     `json:"usedTokens,omitempty"`
	UsedCost   float64 `json:"usedCost,omitempty"`
	// Force makes the next reservation a grant past the budget (a Continue's).
	Force bool `json:"force,omitempty"`
	// Warned: the run published the budget's warning chunk.
	Warned bool `json:"warned,omitempty"`
	// WarnAsked: the run asked the budget's warning question (AskAtWarn).
	WarnAsked bool `json:"warnAsked,omitempty"`
	// WarnStatus is the ledger's status when the run's grant crossed the warning share.
	WarnStatus *contracts.BudgetStatus `json:"warnStatus,omitempty"`
	// Settled: the run told the ledger what it used (it ended).
	Settled bool `json:"settled,omitempty"`
}

// LedgerAsk is a reservation a model pass's activity makes at a ledger before it calls the
// model: Tokens and Cost more for run RunID (its reservation Seq); RoomTokens and RoomCost are
// what the run's earlier grants leave, for the pass of Input tokens and at most Output more
// (priced at Price for a money budget).
type LedgerAsk struct {
	Config     LedgerConfig     `json:"config"`
	ID         string           `json:"id"`
	Window     string           `json:"window,omitempty"`
	RunID      string           `json:"runId"`
	Seq        int              `json:"seq"`
	Tokens     int              `json:"tokens,omitempty"`
	Cost       float64          `json:"cost,omitempty"`
	Force      bool             `json:"force,omitempty"`
	RoomTokens int              `json:"roomTokens"`
	RoomCost   float64          `json:"roomCost,omitempty"`
	Input      int              `json:"input"`
	Output     int              `json:"output"`
	Price      *contracts.Price `json:"price,omitempty"`
}

// Reserve is the update the ask sends to its ledger.
func (a LedgerAsk) Reserve() LedgerReserve {
	return LedgerReserve{RunID: a.RunID, Seq: a.Seq, Tokens: a.Tokens, Cost: a.Cost, Force: a.Force, Budget: a.Config.Budget}
}

// Allowed is the output tokens the pass may write with grant g added to its room: at most
// a.Output, and 0 when the room cannot hold its input and one output token.
func (a LedgerAsk) Allowed(g LedgerGrant) int {
	out := a.Output
	b := a.Config.Budget
	if b.MaxTokens > 0 {
		out = min(out, a.RoomTokens+g.Tokens-a.Input)
	}
	if b.MaxCost > 0 && a.Price != nil {
		left := a.RoomCost + g.Cost - float64(a.Input)*a.Price.Input/1e6
		switch {
		case left < 0:
			out = 0
		case a.Price.Output > 0:
			if n := left / (a.Price.Output / 1e6); n < float64(out) {
				out = int(math.Floor(n + 1e-9))
			}
		}
	}
	return max(out, 0)
}

// LedgerReserve is the ledger's reservation update: Tokens and Cost more for run RunID, whose
// reservation Seq it is (a reservation the ledger saw returns its grant again). Force grants it
// past the budget (the run's question was answered Continue). Budget is the budget as the run
// knows it: the ledger keeps the newest.
type LedgerReserve struct {
	RunID  string                `json:"runId"`
	Seq    int                   `json:"seq"`
	Tokens int                   `json:"tokens,omitempty"`
	Cost   float64               `json:"cost,omitempty"`
	Force  bool                  `json:"force,omitempty"`
	Budget contracts.ScopeBudget `json:"budget"`
}

// LedgerGrant is what a ledger granted a reservation (possibly less than asked, possibly
// nothing), with the ledger's totals after it.
type LedgerGrant struct {
	ID     string  `json:"id"`
	Seq    int     `json:"seq"`
	Tokens int     `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
	// UsedTokens and UsedCost are the ledger's total after the grant: what ended runs spent
	// and what live runs hold.
	UsedTokens int     `json:"usedTokens"`
	UsedCost   float64 `json:"usedCost,omitempty"`
}

// LedgerSettle is the signal a run sends its ledger when it ends: what it spent of its grants.
type LedgerSettle struct {
	RunID  string  `json:"runId"`
	Tokens int     `json:"tokens"`
	Cost   float64 `json:"cost,omitempty"`
}

// LedgerStart is a ledger's input: its scope, key and window, and the state a ledger continued
// as new carries.
type LedgerStart struct {
	Scope  string       `json:"scope"`
	Key    string       `json:"key"`
	Window string       `json:"window,omitempty"`
	State  *LedgerState `json:"state,omitempty"`
	// ContinueAsNewAfter, when > 0, continues the ledger as new after that many settlements in
	// one execution even if Temporal does not suggest it yet (for tests).
	ContinueAsNewAfter int `json:"continueAsNewAfter,omitempty"`
}

// LedgerState is a ledger's durable state.
type LedgerState struct {
	Budget contracts.ScopeBudget `json:"budget"`
	// SpentTokens and SpentCost are what the runs that ended spent; Settled counts them.
	SpentTokens int     `json:"spentTokens,omitempty"`
	SpentCost   float64 `json:"spentCost,omitempty"`
	Settled     int     `json:"settled,omitempty"`
	// OverTokens and OverCost are what Continue granted past the budget.
	OverTokens int     `json:"overTokens,omitempty"`
	OverCost   float64 `json:"overCost,omitempty"`
	// Runs are the live runs' claims, by run id.
	Runs map[string]*LedgerClaim `json:"runs,omitempty"`
}

// LedgerClaim is a live run's claim on a ledger: its grants, by reservation number.
type LedgerClaim struct {
	Tokens int                 `json:"tokens,omitempty"`
	Cost   float64             `json:"cost,omitempty"`
	Grants map[int]LedgerGrant `json:"grants,omitempty"`
}

// Used is what the ledger counts as used: the ended runs' spend and the live runs' grants.
func (s *LedgerState) Used() (int, float64) {
	tokens, cost := s.SpentTokens, s.SpentCost
	for _, id := range s.RunIDs() {
		c := s.Runs[id]
		tokens += c.Tokens
		cost += c.Cost
	}
	return tokens, cost
}

// RunIDs are the live runs' ids, sorted (workflow code sums in this order, never the map's).
func (s *LedgerState) RunIDs() []string {
	return slices.Sorted(maps.Keys(s.Runs))
}

// Reserve grants q (or returns the grant q's reservation number had) and returns it.
func (s *LedgerState) Reserve(id string, q LedgerReserve) LedgerGrant {
	if q.Budget.On() {
		s.Budget = q.Budget
	}
	c := s.Runs[q.RunID]
	if c == nil {
		if s.Runs == nil {
			s.Runs = map[string]*LedgerClaim{}
		}
		c = &LedgerClaim{Grants: map[int]LedgerGrant{}}
		s.Runs[q.RunID] = c
	}
	if g, ok := c.Grants[q.Seq]; ok {
		return g
	}
	usedTokens, usedCost := s.Used()
	g := LedgerGrant{ID: id, Seq: q.Seq, Tokens: q.Tokens, Cost: q.Cost}
	if !q.Force {
		if s.Budget.MaxTokens > 0 {
			g.Tokens = max(min(q.Tokens, s.Budget.MaxTokens-usedTokens), 0)
		}
		if s.Budget.MaxCost > 0 {
			g.Cost = max(min(q.Cost, s.Budget.MaxCost-usedCost), 0)
		}
	} else {
		if s.Budget.MaxTokens > 0 {
			s.OverTokens += max(g.Tokens-max(s.Budget.MaxTokens-usedTokens, 0), 0)
		}
		if s.Budget.MaxCost > 0 {
			s.OverCost += max(g.Cost-max(s.Budget.MaxCost-usedCost, 0), 0)
		}
	}
	c.Tokens += g.Tokens
	c.Cost += g.Cost
	g.UsedTokens, g.UsedCost = usedTokens+g.Tokens, usedCost+g.Cost
	c.Grants[q.Seq] = g
	return g
}

// Settle replaces run's claim by what it spent (a run the ledger does not know, or settled
// already, changes nothing).
func (s *LedgerState) Settle(q LedgerSettle) {
	if _, ok := s.Runs[q.RunID]; !ok {
		return
	}
	delete(s.Runs, q.RunID)
	s.SpentTokens += q.Tokens
	s.SpentCost += q.Cost
	s.Settled++
}

// LedgerView is what a ledger's state query returns (the Studio's /api/budgets).
type LedgerView struct {
	Scope  string                `json:"scope"`
	Key    string                `json:"key"`
	Window string                `json:"window,omitempty"`
	Budget contracts.ScopeBudget `json:"budget"`
	// Tokens and Cost are what the ledger counts as used: Spent (the ended runs') and Held
	// (the live runs' grants).
	Tokens      int              `json:"tokens"`
	Cost        float64          `json:"cost,omitempty"`
	SpentTokens int              `json:"spentTokens"`
	SpentCost   float64          `json:"spentCost,omitempty"`
	Settled     int              `json:"settled"`
	OverTokens  int              `json:"overTokens,omitempty"`
	OverCost    float64          `json:"overCost,omitempty"`
	Live        []LedgerRunClaim `json:"live"`
}

// LedgerRunClaim is a live run's grant in a [LedgerView].
type LedgerRunClaim struct {
	RunID  string  `json:"runId"`
	Tokens int     `json:"tokens"`
	Cost   float64 `json:"cost,omitempty"`
}

// View is s as its state query returns it.
func (s *LedgerState) View(in LedgerStart) LedgerView {
	v := LedgerView{Scope: in.Scope, Key: in.Key, Window: in.Window, Budget: s.Budget, SpentTokens: s.SpentTokens, SpentCost: s.SpentCost,
		Settled: s.Settled, OverTokens: s.OverTokens, OverCost: s.OverCost, Live: []LedgerRunClaim{}}
	v.Tokens, v.Cost = s.Used()
	for _, id := range s.RunIDs() {
		c := s.Runs[id]
		v.Live = append(v.Live, LedgerRunClaim{RunID: id, Tokens: c.Tokens, Cost: c.Cost})
	}
	return v
}
