package execution

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"go.temporal.io/sdk/workflow"
)

// A run's token and money budget (contracts.Limits MaxTokens and MaxCost, docs/budgets.md).
// The root run keeps it in its workflow state: its own passes reserve and settle there (no
// Temporal action of their own); a descendant reserves each pass at the root with the
// reservation signals of the execution limits, reporting what it spent so far, and hands
// its total to its parent in its result when it ends.

// DefaultOutputReserve is the output a model pass without a maximum output
// (providers.CallOptions.MaxOutputTokens) reserves; when less is left of the budget, the pass
// is sent with what is left as its maximum output.
const DefaultOutputReserve = 4096

// bytesPerToken is the estimate of a pass's input tokens from its size.
const bytesPerToken = 4

// The budget questions.
const (
	BudgetQuestion        = "Budget reached — Continue?"
	SessionBudgetQuestion = "Session budget reached — Continue?"
	BudgetWarnQuestion    = "Budget almost used — Continue?"
	// SessionWarnQuestion is the session budget's warning question (its AskAtWarn), asked once
	// per session by the run that reaches the share.
	SessionWarnQuestion = "Session budget almost used — Continue?"
	BudgetQuestionID    = "budget-exhausted"
	BudgetWarnID        = "budget-warning"
	BudgetContinue      = "continue"
	BudgetStop          = "stop"
	BudgetCheckpoint    = "Budget reached"
)

// passHold is a model pass's reservation under the run's budget and its shares of shared
// budgets.
type passHold struct {
	on     bool
	tokens int
	cost   float64
	price  *contracts.Price
	// input is the pass's estimated input; ledger its holds of the run's shares of shared
	// budgets, asks the reservations its activity makes at their ledgers.
	input  int
	output int
	ledger []ledgerUse
	asks   []protocol.LedgerAsk
}

// ApplyBudget gives a new root run its budget: the worker's default recorded at its start,
// overridden by the run's own (in, from its input); and, for a run of a session with a budget,
// the session's (session: what the session gives the run). A run continued as new (continued)
// keeps the budget it carries, and a run restored from a checkpoint its run budget; a child is
// bound by its root's.
func (r *Run) ApplyBudget(in *contracts.Limits, session *protocol.SessionBudget, continued bool) {
	if r.Child != nil || r.budgetStarted || continued {
		return
	}
	r.budgetStarted = true
	if r.Snap.Budget == nil || (r.Snap.Budget.Pricing == nil && !protocol.HasBudget(r.Snap.Budget.Limits)) {
		if l := protocol.BudgetOver(protocol.BudgetOf(r.startBudget.Default), in); protocol.HasBudget(l) {
			b := r.localBudget()
			b.Limits = protocol.BudgetOver(b.Limits, &l)
			if l.MaxCost > 0 {
				r.startPricing()
			}
		}
	}
	if b := r.Snap.Budget; b != nil {
		b.Session = nil // a restored run's snapshot has its origin's
		b.Ledgers = nil // and its origin's shares of shared budgets
	}
	r.startLedgers(r.startBudget.Ledgers)
	if session != nil && protocol.HasBudget(session.Limits) {
		b := r.localBudget()
		tokens, cost := r.ownSpend()
		b.Session = &protocol.SessionRunBudget{SessionBudget: *session, StartTokens: tokens, StartCost: cost}
		if session.Limits.MaxCost > 0 {
			r.startPricing()
		}
	}
	r.updateSpend()
}

// startPricing gives the run the prices it recorded at its start, for a money budget.
func (r *Run) startPricing() {
	b := r.localBudget()
	if b.Pricing == nil {
		b.Pricing = r.startBudget.Pricing
	}
	if b.Pricing == nil {
		b.Pricing = &protocol.Pricing{}
	}
}

// ownSpend is what the root run spent so far (a run restored from a checkpoint: the
// checkpoint's run's).
func (r *Run) ownSpend() (int, float64) {
	if r.Snap.Budget == nil {
		return 0, 0
	}
	tokens, cost, _, _ := r.spent()
	return tokens, cost
}

// budgeted reports whether the run's passes are under a token or money budget (its own, its
// root's, or its session's), and whether they are priced (a money budget).
func (r *Run) budgeted() (on, money bool) {
	if r.Child != nil {
		return protocol.HasBudget(r.Child.Limits) || r.Child.Budgeted, r.Child.Pricing != nil
	}
	b := r.Snap.Budget
	if b == nil {
		return false, false
	}
	return protocol.HasBudget(b.Limits) || b.Session != nil, b.Pricing != nil
}

// SessionSpend is what the run reports to its session with a checkpoint (nil: the session has
// no budget): its spend under the session's budget since it started, and the allowances its
// questions gave.
func (r *Run) SessionSpend() *protocol.RunSpendReport {
	b := r.Snap.Budget
	if r.Child != nil || b == nil || b.Session == nil {
		return nil
	}
	tokens, cost := r.ownSpend()
	s := b.Session
	return &protocol.RunSpendReport{Tokens: tokens - s.StartTokens, Cost: cost - s.StartCost, MoreTokens: s.MoreTokens, MoreCost: s.MoreCost, Warned: s.WarnedHere}
}

// pricing is what the run prices its passes with (nil: no money budget).
func (r *Run) pricing() *protocol.Pricing {
	if r.Child != nil {
		return r.Child.Pricing
	}
	if r.Snap.Budget != nil {
		return r.Snap.Budget.Pricing
	}
	return nil
}

// ChildPricing is the pricing a child run is given (the root's, or the one it was given).
func (r *Run) ChildPricing() *protocol.Pricing { return r.pricing() }

// localBudget is the run's own budget state (created for a child, which keeps its spend there).
func (r *Run) localBudget() *protocol.Budget {
	if r.Snap.Budget == nil {
		r.Snap.Budget = &protocol.Budget{}
	}
	return r.Snap.Budget
}

// estimateInput estimates the input tokens of a pass from its size (its messages with every
// message inline, and its tools): one token per 4 bytes, rounded up.
func estimateInput(in protocol.ModelPassInput) int {
	n := 0
	for _, m := range in.Messages {
		n += 8 + len(m.Role) + len(m.Content) + len(m.StructuredContent) + len(m.Name) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += 8 + len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range in.Tools {
		n += 64 + len(t) // a worker tool's definition, which the worker adds, is not known here
	}
	for _, t := range in.ControlTools {
		n += 8 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return (n + bytesPerToken - 1) / bytesPerToken
}

// ReservePass reserves a model pass's estimate (in, with every message inline) under the run's
// budget before it is sent: its input tokens and its maximum output, priced when the run has a
// money budget. It returns the hold to settle and, when the budget has less left than the
// pass's maximum output, the output to send instead (0: the pass is unchanged). A pass that
// cannot be granted pauses the run with the budget question, or fails with BUDGET_EXHAUSTED.
func (r *Run) ReservePass(ctx workflow.Context, in protocol.ModelPassInput) (passHold, int, error) {
	on, money := r.budgeted()
	shared := len(r.ledgerConfigs()) > 0
	if !on && !shared {
		return passHold{}, 0, nil
	}
	var price *contracts.Price
	if money || protocol.LedgersCost(r.ledgerConfigs()) {
		p, err := r.passPrice(in.Model)
		if err != nil {
			return passHold{}, 0, err
		}
		price = &p
	}
	input := estimateInput(in)
	output := in.Options.MaxOutputTokens
	if output <= 0 {
		output = DefaultOutputReserve
	}
	if shared {
		if err := r.askLedgerWarnings(ctx); err != nil {
			return passHold{}, 0, err
		}
	}
	h, out := passHold{}, 0
	if on {
		var err error
		if h, out, err = r.reserveRunBudget(ctx, input, output, price); err != nil {
			return passHold{}, 0, err
		}
	}
	if shared {
		if out > 0 {
			output = out
		}
		h.input, h.output, h.price = input, output, price
		h.ledger, h.asks = r.reserveLedgers(ctx, input, output, price)
	}
	return h, out, nil
}

// reserveRunBudget reserves a pass of input tokens and at most output more under the run's
// budget and its session's (a child: at its root).
func (r *Run) reserveRunBudget(ctx workflow.Context, input, output int, price *contracts.Price) (passHold, int, error) {
	if r.Child != nil {
		return r.reserveBudgetAtRoot(ctx, input, output, price)
	}
	b := r.Snap.Budget
	for {
		if r.warnDue() {
			if err := r.askBudgetWarning(ctx); err != nil {
				return passHold{}, 0, err
			}
			continue
		}
		granted, kind := r.grantable(input, output, price)
		if granted > 0 {
			h := passHold{on: true, tokens: input + granted, price: price}
			if price != nil {
				h.cost = price.Cost(contracts.Usage{Input: input, Output: granted})
			}
			b.HeldTokens += h.tokens
			b.HeldCost += h.cost
			return h, clampOutput(granted, output), nil
		}
		if err := r.budgetExhausted(ctx, kind, input, price); err != nil {
			return passHold{}, 0, err
		}
		r.serveReservations(ctx)
	}
}

// clampOutput is the maximum output to send for a pass granted granted of output tokens.
func clampOutput(granted, output int) int {
	if granted < output {
		return granted
	}
	return 0
}

// passPrice is the price of the model a pass calls.
func (r *Run) passPrice(ref providers.ModelRef) (contracts.Price, error) {
	p := r.pricing()
	if p == nil {
		p = &protocol.Pricing{}
	}
	key := p.Key(ref.Provider, ref.Model)
	if price, ok := p.Prices[key]; ok && key != "" {
		return price, nil
	}
	name := key
	if name == "" {
		name = strings.TrimPrefix(ref.Provider+":"+ref.Model, ":")
		if name == "" {
			name = "(the worker's default model, which it does not name)"
		}
	}
	return contracts.Price{}, contracts.Errorf(contracts.CodePriceMissing,
		"the run has a money budget (maxCost) but the worker's price table has no price for the model %s: add it to the price table (KORTYX_PRICES, or Registry.SetPrices)", name)
}

// spent is what the root's budget counts as spent and held: its own settled passes, its ended
// children's, its live descendants' reports and holds (summed in id order: deterministic).
func (r *Run) spent() (tokens int, cost float64, heldTokens int, heldCost float64) {
	b := r.Snap.Budget
	tokens, cost, heldTokens, heldCost = b.Tokens, b.Cost, b.HeldTokens, b.HeldCost
	if b.Ended != nil {
		tokens += b.Ended.Tokens
		cost += b.Ended.Cost
	}
	for _, id := range b.DescendantIDs() {
		d := b.Descendants[id]
		tokens += d.Tokens
		cost += d.Cost
		heldTokens += d.HeldTokens
		heldCost += d.HeldCost
	}
	return tokens, cost, heldTokens, heldCost
}

// grantable returns the output tokens the root's budget can grant a pass of input tokens that
// asks for output (priced at price when the budget has money) and, when it can grant fewer than
// asked, the budget that bounds it (LimitTokens or LimitCost). 0: it cannot grant the pass.
func (r *Run) grantable(input, output int, price *contracts.Price) (int, string) {
	b := r.Snap.Budget
	l := b.Limits
	tokens, cost, heldTokens, heldCost := r.spent()
	room, kind := output, ""
	if l.MaxTokens > 0 {
		if left := l.MaxTokens + b.MoreTokens - tokens - heldTokens - input; left < room {
			room, kind = left, protocol.LimitTokens
		}
	}
	if l.MaxCost > 0 && price != nil {
		left := l.MaxCost + b.MoreCost - cost - heldCost - float64(input)*price.Input/1e6
		if out := outputFor(left, *price, room); out < room {
			room, kind = out, protocol.LimitCost
		}
	}
	if sb := b.Session; sb != nil {
		// The session's budget: what its other runs spent, and this run's spend since it
		// started under it.
		sl := sb.Limits
		if sl.MaxTokens > 0 {
			if left := sl.MaxTokens + sb.More.Tokens + sb.MoreTokens - sb.Spent.Tokens - (tokens - sb.StartTokens) - heldTokens - input; left < room {
				room, kind = left, protocol.LimitSessionTokens
			}
		}
		if sl.MaxCost > 0 && price != nil {
			left := sl.MaxCost + sb.More.Cost + sb.MoreCost - sb.Spent.Cost - (cost - sb.StartCost) - heldCost - float64(input)*price.Input/1e6
			if out := outputFor(left, *price, room); out < room {
				room, kind = out, protocol.LimitSessionCost
			}
		}
	}
	if room < 1 {
		return 0, kind
	}
	return room, kind
}

// outputFor is the output tokens, at most room, that left money pays for at price (0 when the
// input alone is over it).
func outputFor(left float64, price contracts.Price, room int) int {
	switch {
	case left < 0:
		return 0
	case price.Output > 0:
		if n := left / (price.Output / 1e6); n < float64(room) {
			return int(math.Floor(n + 1e-9)) // a Continue's allowance is exact: no rounding below it
		}
	}
	return room
}

// SettlePass settles a pass's hold with the usage its provider reported (for a failed pass,
// the usage its failure reports, if any).
func (r *Run) SettlePass(h passHold, u providers.Usage) {
	if !h.on && len(h.ledger) == 0 {
		return
	}
	tokens := u.Total
	if tokens == 0 {
		tokens = u.Input + u.Output + u.Reasoning
	}
	var cost float64
	if h.price != nil {
		cost = h.price.Cost(u)
	}
	r.settleLedgers(h.ledger, tokens, cost)
	b := r.localBudget()
	b.Tokens += tokens
	b.Cost += cost
	if r.Child == nil && h.on {
		b.HeldTokens -= h.tokens
		b.HeldCost -= h.cost
		r.checkWarning()
	}
	r.updateSpend()
}

// FailedPassUsage is the usage a failed pass's failure reports (zero if none).
func FailedPassUsage(err error) providers.Usage {
	var ke *contracts.Error
	if errors.As(err, &ke) && ke.Usage != nil {
		return *ke.Usage
	}
	if f := contracts.FailureOf(err); f.Usage != nil {
		return *f.Usage
	}
	return providers.Usage{}
}

// updateSpend keeps the run's spend in its state (RunState, the result a parent reads).
func (r *Run) updateSpend() {
	b := r.Snap.Budget
	if b == nil || (!protocol.HasBudget(r.limits()) && b.Tokens == 0 && b.Ended == nil && len(b.Ledgers) == 0) {
		return
	}
	s := &contracts.Spend{Scopes: r.scopeSpends()}
	if r.Child == nil {
		s.Tokens, s.Cost, _, _ = r.spent()
	} else {
		s.Tokens, s.Cost = b.Tokens, b.Cost
		if b.Ended != nil {
			s.Tokens += b.Ended.Tokens
			s.Cost += b.Ended.Cost
		}
	}
	if p := r.pricing(); p != nil {
		s.Currency = p.Currency
	}
	l := r.limits()
	if l.MaxTokens > 0 {
		s.MaxTokens = l.MaxTokens
	}
	if l.MaxCost > 0 {
		s.MaxCost = l.MaxCost
	}
	if r.Child == nil {
		s.MaxTokens += b.MoreTokens
		s.MaxCost += b.MoreCost
	}
	r.Snap.State.Runtime.Spend = s
}

// budgetStatus is the root's budget status with limit the budget named: the run's, or its
// session's for a session kind (LimitSessionTokens, LimitSessionCost), which the status names
// "maxTokens" or "maxCost" in scope "session".
func (r *Run) budgetStatus(limit string) contracts.BudgetStatus {
	b := r.Snap.Budget
	tokens, cost, _, _ := r.spent()
	st := contracts.BudgetStatus{Scope: "run", Limit: limit, Tokens: tokens, Cost: cost}
	if b.Pricing != nil {
		st.Currency = b.Pricing.Currency
	}
	if sb := b.Session; sb != nil && (limit == protocol.LimitSessionTokens || limit == protocol.LimitSessionCost) {
		st.Scope = "session"
		st.Limit = map[string]string{protocol.LimitSessionTokens: protocol.LimitTokens, protocol.LimitSessionCost: protocol.LimitCost}[limit]
		st.Tokens = sb.Spent.Tokens + tokens - sb.StartTokens
		st.Cost = sb.Spent.Cost + cost - sb.StartCost
		if sb.Limits.MaxTokens > 0 {
			st.MaxTokens = sb.Limits.MaxTokens + sb.More.Tokens + sb.MoreTokens
		}
		if sb.Limits.MaxCost > 0 {
			st.MaxCost = sb.Limits.MaxCost + sb.More.Cost + sb.MoreCost
		}
		return st
	}
	if b.Limits.MaxTokens > 0 {
		st.MaxTokens = b.Limits.MaxTokens + b.MoreTokens
	}
	if b.Limits.MaxCost > 0 {
		st.MaxCost = b.Limits.MaxCost + b.MoreCost
	}
	return st
}

// checkWarning publishes the budget's status chunk once its spend reaches the warning share
// (which makes the warning question due with AskAtWarn).
func (r *Run) checkWarning() {
	b := r.Snap.Budget
	if b == nil {
		return
	}
	r.checkSessionWarning()
	if b.Warned {
		return
	}
	share := warnShare(b.Limits.BudgetWarnAt)
	if share >= 1 {
		return
	}
	st := r.budgetStatus("")
	if !crossed(&st, share) {
		return
	}
	b.Warned = true
	r.Emit(contracts.Chunk{Type: contracts.ChunkStatus, RunID: r.ID, Message: "Budget " + strconv.Itoa(int(math.Round(share*100))) + "% used: " + spendText(st), Budget: &st})
}

// checkSessionWarning publishes the session budget's status chunk once per session (the runs
// before this one did not: SessionBudget.Warned) when its spend reaches its warning share.
func (r *Run) checkSessionWarning() {
	sb := r.Snap.Budget.Session
	if sb == nil || sb.Warned || sb.WarnedHere {
		return
	}
	share := warnShare(sb.Limits.BudgetWarnAt)
	if share >= 1 {
		return
	}
	st := r.budgetStatus(protocol.LimitSessionTokens)
	if !crossed(&st, share) {
		return
	}
	sb.WarnedHere = true
	r.Emit(contracts.Chunk{Type: contracts.ChunkStatus, RunID: r.ID, Message: "Session budget " + strconv.Itoa(int(math.Round(share*100))) + "% used: " + spendText(st), Budget: &st})
}

// warnShare is a budget's warning share (0: 0.8).
func warnShare(s float64) float64 {
	if s == 0 {
		return 0.8
	}
	return s
}

// crossed reports whether st's spend reached share of its budget, and names the budget in st.
func crossed(st *contracts.BudgetStatus, share float64) bool {
	switch {
	case st.MaxTokens > 0 && float64(st.Tokens) >= share*float64(st.MaxTokens):
		st.Limit = protocol.LimitTokens
	case st.MaxCost > 0 && st.Cost >= share*st.MaxCost:
		st.Limit = protocol.LimitCost
	default:
		return false
	}
	return true
}

// spendText says what the status's limit spent of its budget ("812 of 1000 tokens",
// "0.41 of 0.50 USD").
func spendText(st contracts.BudgetStatus) string {
	if st.Limit == protocol.LimitCost {
		return money(st.Cost) + " of " + money(st.MaxCost) + " " + st.Currency
	}
	return strconv.Itoa(st.Tokens) + " of " + strconv.Itoa(st.MaxTokens) + " tokens"
}

// money formats an amount with at least two decimals and at most six.
func money(v float64) string {
	s := strconv.FormatFloat(v, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i < 3 {
		s += strings.Repeat("0", 3-(len(s)-i))
	}
	return s
}

// more is the allowance Continue gives for the budget kind: the budget again, or what the
// pass needs if that is more.
func (r *Run) more(kind string, input int, price *contracts.Price) (int, float64) {
	st := r.budgetStatus(kind)
	_, _, heldTokens, heldCost := r.spent()
	limits := r.Snap.Budget.Limits
	if sb := r.Snap.Budget.Session; st.Scope == "session" {
		limits = sb.Limits
	}
	if st.Limit == protocol.LimitCost {
		need := st.Cost + heldCost - st.MaxCost
		if price != nil {
			need += price.Cost(contracts.Usage{Input: input, Output: 1})
		}
		return 0, max(limits.MaxCost, need)
	}
	need := st.Tokens + heldTokens + input + 1 - st.MaxTokens
	return max(limits.MaxTokens, need), 0
}

// budgetExhausted handles a pass the root's budget (or its session's: kind) cannot grant: with
// OnBudgetExhausted "fail" it returns BUDGET_EXHAUSTED; otherwise it publishes a limit-reached
// chunk and pauses the run with the budget question: Continue gives the allowance [Run.more]
// says, Stop fails the run.
func (r *Run) budgetExhausted(ctx workflow.Context, kind string, input int, price *contracts.Price) error {
	b := r.Snap.Budget
	st := r.budgetStatus(kind)
	moreTokens, moreCost := r.more(kind, input, price)
	onExhausted, question, whose := b.Limits.OnBudgetExhausted, BudgetQuestion, "run's"
	if st.Scope == "session" {
		onExhausted, question, whose = b.Session.Limits.OnBudgetExhausted, SessionBudgetQuestion, "session's"
	}
	st = r.emitLimitReached(kind, input, price)
	exhausted := contracts.Errorf(contracts.CodeBudgetExhausted, "the %s budget is used up: %s spent, and a model pass needs more; raise the budget (%s) or continue the run", whose, spendText(st), st.Limit)
	if onExhausted == contracts.BudgetFail {
		return exhausted
	}
	label := "Continue with " + strconv.Itoa(moreTokens) + " more tokens"
	if st.Limit == protocol.LimitCost {
		label = "Continue with " + money(moreCost) + " " + st.Currency + " more"
	}
	answer, err := r.askBudget(ctx, BudgetQuestionID, question, label, st)
	if err != nil {
		return err
	}
	if answer != BudgetContinue {
		return exhausted
	}
	if st.Scope == "session" {
		b.Session.MoreTokens += moreTokens
		b.Session.MoreCost += moreCost
	} else {
		b.MoreTokens += moreTokens
		b.MoreCost += moreCost
	}
	r.updateSpend()
	return nil
}

// warnDue reports whether the root's warning question is due: the warning share was reached,
// AskAtWarn is set, and it was not asked yet.
func (r *Run) warnDue() bool {
	b := r.Snap.Budget
	if b == nil {
		return false
	}
	if sb := b.Session; sb != nil && sb.WarnedHere && sb.Limits.AskAtWarn && !sb.WarnAsked {
		return true
	}
	return b.Warned && b.Limits.AskAtWarn && !b.WarnAsked
}

// emitLimitReached publishes the limit-reached chunk of a pass of input tokens (priced at
// price) that the budget kind cannot grant, with the budget's status and the least the pass
// needs (Reserve), and returns that status.
func (r *Run) emitLimitReached(kind string, input int, price *contracts.Price) contracts.BudgetStatus {
	st := r.budgetStatus(kind)
	if st.Limit == protocol.LimitCost {
		if price != nil {
			st.Reserve = price.Cost(contracts.Usage{Input: input, Output: 1})
		}
	} else {
		st.Reserve = float64(input + 1)
	}
	chunk := contracts.Chunk{Type: contracts.ChunkLimitReached, RunID: r.ID, Limit: st.Limit, Budget: &st}
	if st.Limit == protocol.LimitTokens {
		chunk.Maximum, chunk.Consumed = st.MaxTokens, st.Tokens
	}
	r.Emit(chunk)
	return st
}

// askBudgetWarning asks the warning question once (AskAtWarn): Continue goes on, Stop fails
// the run with BUDGET_EXHAUSTED.
func (r *Run) askBudgetWarning(ctx workflow.Context) error {
	if sb := r.Snap.Budget.Session; sb != nil && sb.WarnedHere && sb.Limits.AskAtWarn && !sb.WarnAsked {
		// The session budget's warning: asked once per session (the runs after this one see
		// the session's Warned and publish no warning, so they ask nothing).
		sb.WarnAsked = true
		limit := protocol.LimitSessionTokens
		if sb.Limits.MaxTokens == 0 {
			limit = protocol.LimitSessionCost
		}
		st := r.budgetStatus(limit)
		answer, err := r.askBudget(ctx, BudgetWarnID, SessionWarnQuestion, "Continue", st)
		if err != nil {
			return err
		}
		if answer != BudgetContinue {
			return contracts.Errorf(contracts.CodeBudgetExhausted, "the run was stopped at its session budget's warning: %s spent", spendText(st))
		}
		return nil
	}
	r.Snap.Budget.WarnAsked = true
	st := r.budgetStatus("")
	if st.MaxTokens > 0 && (st.MaxCost == 0 || float64(st.Tokens)/float64(st.MaxTokens) >= st.Cost/st.MaxCost) {
		st.Limit = protocol.LimitTokens
	} else {
		st.Limit = protocol.LimitCost
	}
	answer, err := r.askBudget(ctx, BudgetWarnID, BudgetWarnQuestion, "Continue", st)
	if err != nil {
		return err
	}
	if answer != BudgetContinue {
		return contracts.Errorf(contracts.CodeBudgetExhausted, "the run was stopped at its budget's warning: %s spent", spendText(st))
	}
	return nil
}

// askBudget asks a budget question (a choice of Continue, labelled label, and Stop; its meta
// the code BUDGET_EXHAUSTED and the budget's status) and returns the option chosen.
func (r *Run) askBudget(ctx workflow.Context, id, question, label string, st contracts.BudgetStatus) (string, error) {
	token, requestID := r.requestIDs(ctx)
	meta := protocol.RawJSON(map[string]any{"code": contracts.CodeBudgetExhausted, "budget": st})
	req := contracts.PendingRequest{RequestID: requestID, Token: token, Workflow: r.Snap.State.CurrentWorkflow, Node: r.Node,
		HookID: id, CreatedAt: workflow.Now(ctx), Input: contracts.InterruptInput{
			Kind: contracts.InterruptChoice, Question: question, ID: id, Meta: meta,
			Options: []contracts.Option{{ID: BudgetContinue, Label: label}, {ID: BudgetStop, Label: "Stop"}}}}
	if r.session != nil {
		r.session.Label(BudgetCheckpoint)
	}
	workflow.GetLogger(ctx).Info("kortyx: budget question", "question", question, "tokens", st.Tokens, "cost", st.Cost)
	ans, err := r.Ask(ctx, req, nil)
	if err != nil {
		return "", err
	}
	if len(ans.Selected) == 1 {
		return ans.Selected[0], nil
	}
	return ans.Text, nil
}

// reserveBudgetAtRoot asks the root to reserve a pass of this descendant run, reporting what
// the run spent so far, and waits for the grant.
func (r *Run) reserveBudgetAtRoot(ctx workflow.Context, input, output int, price *contracts.Price) (passHold, int, error) {
	b := r.localBudget()
	b.Seq++
	id := fmt.Sprintf("%s:%d", r.ID, b.Seq)
	q := protocol.Reservation{ID: id, From: r.ID, Kind: protocol.LimitBudget, Input: input, Output: output, Price: price,
		Spent: &contracts.Spend{Tokens: b.Tokens, Cost: b.Cost}}
	if err := workflow.SignalExternalWorkflow(ctx, r.Child.RootID, "", protocol.BudgetReserveSignal, q).Get(ctx, nil); err != nil {
		return passHold{}, 0, err
	}
	if err := workflow.Await(ctx, func() bool { _, ok := r.grants[id]; return ok }); err != nil {
		return passHold{}, 0, err
	}
	g := r.grants[id]
	delete(r.grants, id)
	if g.Denied {
		return passHold{}, 0, contracts.Errorf(contracts.CodeBudgetExhausted, "the budget of the run's root is used up: a model pass of this child run was not granted")
	}
	return passHold{on: true, price: price}, clampOutput(g.Output, output), nil
}

// grantBudget tries to grant a descendant's pass reservation at the root, after taking in what
// the descendant reported spent (its earlier hold released): the grant to send, and whether
// it could be given.
func (r *Run) grantBudget(q protocol.Reservation) (protocol.Grant, bool) {
	b := r.Snap.Budget
	if b.Descendants == nil {
		b.Descendants = map[string]protocol.DescendantSpend{}
	}
	d := protocol.DescendantSpend{}
	if q.Spent != nil {
		d.Tokens, d.Cost = q.Spent.Tokens, q.Spent.Cost
	}
	b.Descendants[q.From] = d
	r.checkWarning()
	r.updateSpend()
	if r.warnDue() {
		return protocol.Grant{}, false
	}
	granted, kind := r.grantable(q.Input, q.Output, q.Price)
	if granted < 1 {
		onExhausted := b.Limits.OnBudgetExhausted
		if (kind == protocol.LimitSessionTokens || kind == protocol.LimitSessionCost) && b.Session != nil {
			onExhausted = b.Session.Limits.OnBudgetExhausted
		}
		if onExhausted == contracts.BudgetFail {
			r.emitLimitReached(kind, q.Input, q.Price)
			return protocol.Grant{ID: q.ID, Denied: true}, true
		}
		return protocol.Grant{}, false
	}
	d.HeldTokens = q.Input + granted
	if q.Price != nil {
		d.HeldCost = q.Price.Cost(contracts.Usage{Input: q.Input, Output: granted})
	}
	b.Descendants[q.From] = d
	return protocol.Grant{ID: q.ID, Output: granted}, true
}

// pauseForBudget pauses the root for a descendant's reservation it cannot grant: the budget
// question (or the warning question), then the queue is served again.
func (r *Run) pauseForBudget(ctx workflow.Context, q protocol.Reservation) error {
	if r.warnDue() {
		return r.askBudgetWarning(ctx)
	}
	_, kind := r.grantable(q.Input, q.Output, q.Price)
	if kind == "" {
		kind = protocol.LimitTokens
	}
	return r.budgetExhausted(ctx, kind, q.Input, q.Price)
}

// ChildEnded takes in a direct child's end at its parent: its descendants' reports and holds
// are dropped at the root, and the child's total (spend: its result's, or the one its failure
// carries, [FailedChildSpend]) counts as the parent's ended children's. A failed child whose
// failure carries none counts, at the root, what its descendants reported and held.
func (r *Run) ChildEnded(child string, spend *contracts.Spend, failed bool) {
	b := r.Snap.Budget
	if b == nil {
		return
	}
	var ended contracts.Spend
	if spend != nil {
		ended = *spend
	}
	if r.Child == nil && len(b.Descendants) > 0 {
		for _, id := range b.DescendantIDs() {
			if !under(id, child) {
				continue
			}
			if failed && spend == nil {
				d := b.Descendants[id]
				ended.Tokens += d.Tokens + d.HeldTokens
				ended.Cost += d.Cost + d.HeldCost
			}
			delete(b.Descendants, id)
		}
	}
	if ended.Tokens == 0 && ended.Cost == 0 {
		r.updateSpend()
		return
	}
	if b.Ended == nil {
		b.Ended = &contracts.Spend{}
	}
	b.Ended.Tokens += ended.Tokens
	b.Ended.Cost += ended.Cost
	if r.Child == nil {
		r.checkWarning()
	}
	r.updateSpend()
}

// failureSpendKey is the detail of a failed child run's failure that carries its spend.
const failureSpendKey = "budgetSpend"

// FailureDetails adds to the details of a failing child run's failure what it spent under its
// root's budget (its own passes and its ended children's), which its parent counts.
func (r *Run) FailureDetails(details map[string]any) map[string]any {
	b := r.Snap.Budget
	if r.Child == nil || b == nil || !r.budgetedOn() {
		return details
	}
	tokens, cost := b.Tokens, b.Cost
	if b.Ended != nil {
		tokens += b.Ended.Tokens
		cost += b.Ended.Cost
	}
	if details == nil {
		details = map[string]any{}
	}
	details[failureSpendKey] = map[string]any{"tokens": tokens, "cost": cost}
	return details
}

// FailedChildSpend is the spend a failed child run's failure carries (nil: none).
func FailedChildSpend(err error) *contracts.Spend {
	m, _ := contracts.FailureOf(err).Details[failureSpendKey].(map[string]any)
	if m == nil {
		return nil
	}
	tokens, ok1 := m["tokens"].(float64)
	cost, ok2 := m["cost"].(float64)
	if !ok1 || !ok2 {
		return nil
	}
	return &contracts.Spend{Tokens: int(tokens), Cost: cost}
}

// budgetedOn reports whether the run's passes are under a budget ([Run.budgeted]).
func (r *Run) budgetedOn() bool {
	on, _ := r.budgeted()
	return on
}

// under reports whether id is run or one of its descendants.
func under(id, run string) bool { return id == run || strings.HasPrefix(id, run+"/") }

// forgetDescendants drops the root's entries of run and its descendants (a run restored from a
// checkpoint gives their calls new children, which report their spend again).
func (r *Run) forgetDescendants(run string) {
	b := r.Snap.Budget
	if r.Child != nil || b == nil {
		return
	}
	for _, id := range b.DescendantIDs() {
		if under(id, run) {
			delete(b.Descendants, id)
		}
	}
}

// dropReservations drops the queued reservations of run and its descendants (cancelled: nobody
// waits for their grants).
func (r *Run) dropReservations(run string) {
	kept := r.reservations[:0]
	for _, q := range r.reservations {
		if !under(q.From, run) {
			kept = append(kept, q)
		}
	}
	r.reservations = kept
}
