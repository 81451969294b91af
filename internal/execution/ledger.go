package execution

import (
	"math"
	"strconv"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// A run's shares of its shared budgets (an agent's, a tenant's: docs/budgets.md). Each run of
// the tree (the root and each child) keeps its share of each budget's ledger in its own state
// (protocol.LedgerHold): what the ledger granted it and what its passes used. A pass that its
// share holds costs nothing; one it does not hold makes a reservation of a batch, which the
// pass's activity sends to the ledger before it calls the model (one update). The run settles
// what it used with one signal per ledger when it ends.

// ledgerUse is what a pass holds of one ledger share.
type ledgerUse struct {
	at     int // index in the run's Ledgers
	tokens int
	cost   float64
}

// ledgerConfigs are the shared budgets the run is under (a child: the ones its root gave it).
func (r *Run) ledgerConfigs() []protocol.LedgerConfig {
	if r.Child != nil {
		return r.Child.Ledgers
	}
	b := r.Snap.Budget
	if b == nil || len(b.Ledgers) == 0 {
		return nil
	}
	var out []protocol.LedgerConfig
	seen := map[string]bool{}
	for _, h := range b.Ledgers {
		if !seen[h.Config.Scope] {
			seen[h.Config.Scope] = true
			out = append(out, h.Config)
		}
	}
	return out
}

// startLedgers gives a new run its shares (none granted yet) of the shared budgets configs.
func (r *Run) startLedgers(configs []protocol.LedgerConfig) {
	if len(configs) == 0 {
		return
	}
	b := r.localBudget()
	b.Ledgers = nil
	for _, c := range configs {
		b.Ledgers = append(b.Ledgers, protocol.LedgerHold{Config: c})
		if c.Budget.MaxCost > 0 {
			r.startPricing()
		}
	}
}

// StartChildLedgers drops, in a new child run (not one continued as new), the shares of
// shared budgets a snapshot it was restored from carries: they are another run's claims.
func (r *Run) StartChildLedgers(continued bool) {
	if r.Child == nil || continued || r.Snap.Budget == nil {
		return
	}
	r.Snap.Budget.Ledgers = nil
}

// share returns the index of the run's share of config's ledger for the window of now, adding
// one when the window is new.
func (r *Run) share(ctx workflow.Context, c protocol.LedgerConfig) int {
	b := r.localBudget()
	window := protocol.LedgerWindow(c.Budget.Period, workflow.Now(ctx))
	id := protocol.LedgerID(workflow.GetInfo(ctx).TaskQueueName, c.Scope, c.Key, window)
	for i, h := range b.Ledgers {
		if h.Config.Scope == c.Scope && h.ID == id && !h.Settled {
			b.Ledgers[i].Config.Budget = c.Budget
			return i
		}
	}
	for i, h := range b.Ledgers {
		if h.Config.Scope == c.Scope && h.ID == "" { // a share that reserved nothing yet
			b.Ledgers[i].ID, b.Ledgers[i].Window = id, window
			return i
		}
	}
	b.Ledgers = append(b.Ledgers, protocol.LedgerHold{Config: c, ID: id, Window: window})
	return len(b.Ledgers) - 1
}

// batch is what a share reserves at once when its pass needs need (tokens, cost).
func batch(c contracts.ScopeBudget, needTokens int, needCost float64) (int, float64) {
	tokens, cost := c.BatchTokens, c.BatchCost
	if tokens == 0 {
		tokens = c.MaxTokens / 10
	}
	if cost == 0 {
		cost = c.MaxCost / 10
	}
	return max(tokens, needTokens), math.Max(cost, needCost)
}

// reserveLedgers holds a pass of input tokens and at most output more (priced at price) in
// each of the run's shares, and returns the reservations the pass's activity makes at the
// ledgers whose shares do not hold it.
func (r *Run) reserveLedgers(ctx workflow.Context, input, output int, price *contracts.Price) ([]ledgerUse, []protocol.LedgerAsk) {
	var uses []ledgerUse
	var asks []protocol.LedgerAsk
	for _, c := range r.ledgerConfigs() {
		i := r.share(ctx, c)
		h := &r.Snap.Budget.Ledgers[i]
		u := ledgerUse{at: i, tokens: input + output}
		if price != nil {
			u.cost = price.Cost(contracts.Usage{Input: input, Output: output})
		}
		roomTokens, roomCost := h.GrantedTokens-h.UsedTokens, h.GrantedCost-h.UsedCost
		holds := (c.Budget.MaxTokens == 0 || roomTokens >= u.tokens) && (c.Budget.MaxCost == 0 || roomCost >= u.cost-1e-12)
		if !holds || h.Force {
			h.Seq++
			askTokens, askCost := batch(c.Budget, max(u.tokens-roomTokens, 0), math.Max(u.cost-roomCost, 0))
			asks = append(asks, protocol.LedgerAsk{Config: c, ID: h.ID, Window: h.Window, RunID: r.ID, Seq: h.Seq,
				Tokens: askTokens, Cost: askCost, Force: h.Force, RoomTokens: roomTokens, RoomCost: roomCost,
				Input: input, Output: output, Price: price})
			h.Force = false
		}
		h.UsedTokens += u.tokens
		h.UsedCost += u.cost
		uses = append(uses, u)
	}
	return uses, asks
}

// takeGrants adds a pass's grants to the run's shares, and publishes a budget's warning chunk
// (once per run) when its ledger's total reached the warning share.
func (r *Run) takeGrants(grants []protocol.LedgerGrant) {
	b := r.Snap.Budget
	if b == nil {
		return
	}
	for _, g := range grants {
		for i := range b.Ledgers {
			h := &b.Ledgers[i]
			if h.ID != g.ID {
				continue
			}
			h.GrantedTokens += g.Tokens
			h.GrantedCost += g.Cost
			share := warnShare(h.Config.Budget.BudgetWarnAt)
			if h.Warned || share >= 1 {
				continue
			}
			st := ledgerStatus(*h, g, r.pricing())
			if crossed(&st, share) {
				h.Warned = true
				h.WarnStatus = &st
				r.Emit(contracts.Chunk{Type: contracts.ChunkStatus, RunID: r.ID, Message: scopeName(h.Config.Scope) + " budget " +
					strconv.Itoa(int(math.Round(share*100))) + "% used: " + spendText(st), Budget: &st})
			}
		}
	}
	r.updateSpend()
}

// askLedgerWarnings asks, once per run and budget, the warning question of each shared budget
// whose warning share the run's grants reached, when it has AskAtWarn: Continue goes on, Stop
// fails the run with BUDGET_EXHAUSTED.
func (r *Run) askLedgerWarnings(ctx workflow.Context) error {
	b := r.Snap.Budget
	if b == nil {
		return nil
	}
	for i := range b.Ledgers {
		h := &b.Ledgers[i]
		if !h.Warned || h.WarnAsked || !h.Config.Budget.AskAtWarn || h.WarnStatus == nil {
			continue
		}
		h.WarnAsked = true
		st := *h.WarnStatus
		answer, err := r.askBudget(ctx, BudgetWarnID, scopeName(h.Config.Scope)+" budget almost used — Continue?", "Continue", st)
		if err != nil {
			return err
		}
		if answer != BudgetContinue {
			return contracts.Errorf(contracts.CodeBudgetExhausted, "the run was stopped at the %s budget's warning: %s", h.Config.Scope, spendText(st))
		}
	}
	return nil
}

// releaseLedgers gives back a pass's holds (the pass did not run, or failed with no usage).
func (r *Run) releaseLedgers(uses []ledgerUse) {
	for _, u := range uses {
		h := &r.Snap.Budget.Ledgers[u.at]
		h.UsedTokens -= u.tokens
		h.UsedCost -= u.cost
	}
}

// settleLedgers replaces a pass's holds by its usage (tokens, cost).
func (r *Run) settleLedgers(uses []ledgerUse, tokens int, cost float64) {
	for _, u := range uses {
		h := &r.Snap.Budget.Ledgers[u.at]
		h.UsedTokens += tokens - u.tokens
		h.UsedCost += cost - u.cost
	}
}

// scopeName is "Agent" or "Tenant".
func scopeName(scope string) string {
	if scope == contracts.ScopeTenant {
		return "Tenant"
	}
	return "Agent"
}

// ledgerStatus is a share's ledger's status after grant g (the ledger's total), as the budget
// chunks and questions show it.
func ledgerStatus(h protocol.LedgerHold, g protocol.LedgerGrant, p *protocol.Pricing) contracts.BudgetStatus {
	st := contracts.BudgetStatus{Scope: h.Config.Scope, Key: h.Config.Key, Window: h.Window, Tokens: g.UsedTokens, Cost: g.UsedCost,
		MaxTokens: h.Config.Budget.MaxTokens, MaxCost: h.Config.Budget.MaxCost}
	if p != nil && h.Config.Budget.MaxCost > 0 {
		st.Currency = p.Currency
	}
	return st
}

// ledgerShort handles a pass whose reservation at the ledger of scope left too little (the
// pass did not call the model): with the budget's OnBudgetExhausted "fail" it returns
// BUDGET_EXHAUSTED; otherwise it publishes a limit-reached chunk and asks the budget's
// question, whose Continue makes the share's next reservation a grant past the budget.
func (r *Run) ledgerShort(ctx workflow.Context, scope string, res protocol.ModelPassResult, uses []ledgerUse, input int, price *contracts.Price) error {
	r.takeGrants(res.Ledger)
	r.releaseLedgers(uses)
	var h *protocol.LedgerHold
	var g protocol.LedgerGrant
	var use ledgerUse
	for _, u := range uses {
		if c := &r.Snap.Budget.Ledgers[u.at]; c.Config.Scope == scope {
			h, use = c, u
		}
	}
	if h == nil {
		return contracts.Errorf(contracts.CodeBudgetExhausted, "the %s budget is used up", scope)
	}
	for _, x := range res.Ledger {
		if x.ID == h.ID {
			g = x
		}
	}
	st := ledgerStatus(*h, g, r.pricing())
	st.Limit = protocol.LimitTokens
	st.Reserve = float64(input + 1)
	if h.Config.Budget.MaxTokens == 0 || (h.Config.Budget.MaxCost > 0 && st.Tokens < st.MaxTokens) {
		st.Limit = protocol.LimitCost
		if price != nil {
			st.Reserve = price.Cost(contracts.Usage{Input: input, Output: 1})
		}
	}
	chunk := contracts.Chunk{Type: contracts.ChunkLimitReached, RunID: r.ID, Limit: st.Limit, Budget: &st}
	if st.Limit == protocol.LimitTokens {
		chunk.Maximum, chunk.Consumed = st.MaxTokens, st.Tokens
	}
	r.Emit(chunk)
	exhausted := contracts.Errorf(contracts.CodeBudgetExhausted, "the %s budget of %s is used up: %s spent, and a model pass needs more; raise the budget or continue the run",
		scope, h.Config.Key, spendText(st))
	if h.Config.Budget.OnBudgetExhausted == contracts.BudgetFail {
		return exhausted
	}
	// Continue grants what the pass needs past what the run holds (at least a batch).
	moreTokens, moreCost := batch(h.Config.Budget, max(use.tokens-(h.GrantedTokens-h.UsedTokens), 0), math.Max(use.cost-(h.GrantedCost-h.UsedCost), 0))
	label := "Continue with " + strconv.Itoa(moreTokens) + " more tokens"
	if st.Limit == protocol.LimitCost {
		label = "Continue with " + money(moreCost) + " " + st.Currency + " more"
	}
	answer, err := r.askBudget(ctx, BudgetQuestionID, scopeName(scope)+" budget reached — Continue?", label, st)
	if err != nil {
		return err
	}
	if answer != BudgetContinue {
		return exhausted
	}
	h.Force = true
	return nil
}

// SettleLedgers tells each ledger the run reserved at what it used of its grants: one signal
// each, when the run ends. A ledger that is gone (terminated) is not waited for.
func (r *Run) SettleLedgers(ctx workflow.Context) {
	b := r.Snap.Budget
	if b == nil {
		return
	}
	for i := range b.Ledgers {
		h := &b.Ledgers[i]
		if h.Seq == 0 || h.ID == "" || h.Settled {
			continue
		}
		q := protocol.LedgerSettle{RunID: r.ID, Tokens: max(h.UsedTokens, 0), Cost: math.Max(h.UsedCost, 0)}
		if err := workflow.SignalExternalWorkflow(ctx, h.ID, "", protocol.LedgerSettleSignal, q).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("kortyx: a budget ledger did not take the run's settlement", "ledger", h.ID, "error", err)
		}
		h.Settled = true // a run that went on would reserve in a share of its own
	}
}

// scopeSpends is what the run's state shows of its shares.
func (r *Run) scopeSpends() []contracts.ScopeSpend {
	b := r.Snap.Budget
	if b == nil {
		return nil
	}
	var out []contracts.ScopeSpend
	for _, h := range b.Ledgers {
		if h.ID == "" {
			continue
		}
		out = append(out, contracts.ScopeSpend{Scope: h.Config.Scope, Key: h.Config.Key, Window: h.Window, Ledger: h.ID,
			Tokens: h.UsedTokens, Cost: h.UsedCost, GrantedTokens: h.GrantedTokens, GrantedCost: h.GrantedCost})
	}
	return out
}
