package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/bench/internal/rpccount"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/kortyxwire"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// actions are the billable Temporal actions of one turn, by kind, counted with the rules of
// Temporal Cloud's "Actions" page (docs/performance.md cites it): from the recorded histories
// of every workflow the turn touched, plus, from a counting proxy between the processes and the
// server (bench/internal/rpccount), what history does not show (heartbeats that reached the
// server, queries).
type actions struct {
	Scenario string `json:"scenario"`
	// Variant: "kortyx" (measured), "plain" (a hand-written Temporal workflow doing the same
	// turn, measured), "floor" (not run: the hand-written minimum by rule, see floor),
	// "fastpath" (measured: the agent with Definition.FastPath) or "fastpath-local" (measured:
	// the fast path with the tool a local activity too).
	Variant   string `json:"variant"`
	Workflows int    `json:"workflows"` // workflow executions whose history was read
	// Types are their workflow types, in the order read.
	Types  []string `json:"types,omitempty"`
	Events int      `json:"events"`
	// WorkflowTasks are the completed workflow tasks (not billed; what the server did).
	WorkflowTasks int `json:"workflowTasks"`
	Starts        int `json:"starts"`   // client starts (one per Signal-With-Start that started)
	Children      int `json:"children"` // child workflows: two actions each
	// SessionChildren are the Children started by the session workflow (its runs), which a
	// hand-written turn does not have.
	SessionChildren int `json:"sessionChildren"`
	ContinueAsNew   int `json:"continueAsNew"`
	Signals         int `json:"signals"`
	Updates         int `json:"updates"`
	Queries         int `json:"queries"`
	Activities      int `json:"activities"` // activity attempts (retries included)
	Retries         int `json:"retries"`    // of which retries
	Heartbeats      int `json:"heartbeats"`
	Timers          int `json:"timers"`
	// MarkerTasks are the workflow tasks that recorded at least one marker (local activities,
	// side effects, versions): all markers of one workflow task are one action.
	MarkerTasks int `json:"markerTasks"`
	Markers     int `json:"markers"` // markers recorded (not billed one by one)
	Upserts     int `json:"upserts"` // search-attribute upserts (TemporalChangeVersion alone is exempt)
	// Total is the billable actions: Starts + 2×Children + ContinueAsNew + Signals + Updates +
	// Queries + Activities + Heartbeats + Timers + MarkerTasks + Upserts.
	Total int `json:"total"`
	// RPC are the calls of interest the proxy counted during the turn (starts, signals, updates,
	// queries, heartbeats), to set beside the history's counts.
	RPC map[string]int64 `json:"rpc,omitempty"`
}

func (a *actions) sum() {
	a.Total = a.Starts + 2*a.Children + a.ContinueAsNew + a.Signals + a.Updates + a.Queries +
		a.Activities + a.Heartbeats + a.Timers + a.MarkerTasks + a.Upserts
}

func (a actions) line() string {
	j, _ := json.Marshal(a)
	return "Actions " + string(j)
}

// rpcOfInterest are the calls the proxy reports per turn; heartbeats and queries are billed
// from them, the others are shown beside the history's counts.
var rpcOfInterest = []string{
	"StartWorkflowExecution", "SignalWithStartWorkflowExecution", "SignalWorkflowExecution",
	"UpdateWorkflowExecution", "ExecuteMultiOperation", "QueryWorkflow",
	"RecordActivityTaskHeartbeat", "RecordActivityTaskHeartbeatById",
}

// addRPC keeps the calls of interest of calls and bills heartbeats and queries from them.
func (a *actions) addRPC(calls map[string]int64) {
	a.RPC = map[string]int64{}
	for _, m := range rpcOfInterest {
		if n := calls[m]; n > 0 {
			a.RPC[m] = n
		}
	}
	a.Heartbeats = int(calls["RecordActivityTaskHeartbeat"] + calls["RecordActivityTaskHeartbeatById"])
	a.Queries = int(calls["QueryWorkflow"])
}

// addHistory counts the actions of one workflow execution's history.
func (a *actions) addHistory(ctx context.Context, c client.Client, id, runID string) error {
	a.Workflows++
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var lastWFT int64
	marked := map[int64]bool{}
	signalWithStart := false
	session := false
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		a.Events++
		if at := ev.GetWorkflowExecutionStartedEventAttributes(); at != nil {
			session = at.GetWorkflowType().GetName() == protocol.SessionWorkflowName
			a.Types = append(a.Types, at.GetWorkflowType().GetName())
		}
		if session && ev.GetEventType() == enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED {
			a.SessionChildren++
		}
		a.countEvent(ev, &lastWFT, marked, &signalWithStart)
	}
	return nil
}

func (a *actions) countEvent(ev *historypb.HistoryEvent, lastWFT *int64, marked map[int64]bool, signalWithStart *bool) {
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		at := ev.GetWorkflowExecutionStartedEventAttributes()
		// A child's start is billed on its parent (StartChildWorkflowExecutionInitiated), a
		// continued run's on the run that continued (WorkflowExecutionContinuedAsNew).
		if at.GetParentWorkflowExecution() == nil && at.GetContinuedExecutionRunId() == "" {
			a.Starts++
		}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		// Signal-With-Start that started the workflow is one action for both: its signal is
		// event 2, right after the start.
		if ev.GetEventId() == 2 {
			*signalWithStart = true
			return
		}
		a.Signals++
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
		a.Updates++
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		n := int(ev.GetActivityTaskStartedEventAttributes().GetAttempt())
		a.Activities += n
		a.Retries += n - 1
	case enumspb.EVENT_TYPE_TIMER_STARTED:
		a.Timers++
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
		a.WorkflowTasks++
		*lastWFT = ev.GetEventId()
	case enumspb.EVENT_TYPE_MARKER_RECORDED:
		a.Markers++
		if !marked[*lastWFT] {
			marked[*lastWFT] = true
			a.MarkerTasks++
		}
	case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
		f := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
		if _, ok := f["TemporalChangeVersion"]; ok && len(f) == 1 {
			return
		}
		a.Upserts++
	case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
		a.Children++
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		a.ContinueAsNew++
	}
}

// sub returns a − b kind by kind (the marginal actions of a longer run).
func (a actions) sub(b actions) actions {
	d := actions{Scenario: a.Scenario, Variant: a.Variant,
		Workflows: a.Workflows - b.Workflows, Events: a.Events - b.Events, WorkflowTasks: a.WorkflowTasks - b.WorkflowTasks,
		Starts: a.Starts - b.Starts, Children: a.Children - b.Children, ContinueAsNew: a.ContinueAsNew - b.ContinueAsNew,
		Signals: a.Signals - b.Signals, Updates: a.Updates - b.Updates, Queries: a.Queries - b.Queries,
		Activities: a.Activities - b.Activities, Retries: a.Retries - b.Retries, Heartbeats: a.Heartbeats - b.Heartbeats,
		Timers: a.Timers - b.Timers, MarkerTasks: a.MarkerTasks - b.MarkerTasks, Markers: a.Markers - b.Markers,
		Upserts: a.Upserts - b.Upserts}
	d.sum()
	return d
}

// floor is the hand-written minimum of a measured Kortyx turn, by rule and not run: one start,
// the same activity attempts and child workflows, one update per answer; no timer, marker,
// upsert or heartbeat; no session workflow (its child runs are left out).
func floor(k actions, answers int) actions {
	f := actions{Scenario: k.Scenario, Variant: "floor", Starts: 1, Activities: k.Activities, Retries: k.Retries,
		Children: k.Children - k.SessionChildren, Updates: answers}
	f.sum()
	return f
}

// chatScenario is one example agent's turn through the chat route.
type chatScenario struct {
	name, workflow, prompt string
}

var chatScenarios = []chatScenario{
	{"hello (question, answer)", "hello", "hi"},
	{"support (tool loop, approval)", "support", "Please refund order A-1001, it arrived broken."},
	{"triage (structured data, choice)", "triage", "I was charged twice on my last invoice"},
	{"research (three children, question)", "research", "AI agents"},
}

// actionsStack is the stack of the examples (app.Run: worker, HTTP API, a Redis broker)
// dialling the dev server through a counting proxy.
type actionsStack struct {
	proxy *rpccount.Proxy
	c     client.Client // a client of the server, not through the proxy (reads histories)
	queue string
	kc    *kortyxwire.Client
	stop  func()
	// variant names the rows: "kortyx", "fastpath" for the stack of fast-path agents, or
	// "budget" for the stack whose runs have a token and money budget (issue 34).
	variant string
}

// The variants of the counting stack.
const (
	stackKortyx   = "kortyx"
	stackFastPath = "fastpath"
	stackBudget   = "budget"
	stackSteer    = "steer"
	stackLedger   = "ledger"
)

// fastPathExamples registers the chosen examples as copies with FastPath set: each example is
// registered on a scratch registry first (its node functions with it), then its definitions
// and node functions are added to reg.
func fastPathExamples(chosen *examples.Set) func(*workflows.Registry) error {
	return func(reg *workflows.Registry) error {
		scratch := workflows.NewRegistry()
		if err := chosen.Register(scratch); err != nil {
			return err
		}
		for _, d := range scratch.Workflows() {
			c := *d
			c.FastPath = true
			if err := reg.Add(&c); err != nil {
				return err
			}
		}
		return nil
	}
}

// With stackFastPath, every example agent is registered with workflows.Definition.FastPath
// (what `fastPath: true` in its YAML would do): its model passes run as local activities. With
// stackBudget, every run has the worker's default budget of tokens and money (KORTYX_MAX_TOKENS
// and KORTYX_MAX_COST, priced by a KORTYX_PRICES table) and every session the API's
// (KORTYX_SESSION_MAX_TOKENS, KORTYX_SESSION_MAX_COST), large enough never to pause. With
// stackLedger, every agent has a shared budget (KORTYX_AGENT_MAX_TOKENS), as large.
func (e *env) startActionsStack(tb testing.TB, variant string) *actionsStack {
	tb.Helper()
	p, err := rpccount.Start(e.srv.Address())
	require.NoError(tb, err)
	s := &actionsStack{proxy: p, c: e.c, queue: "kortyx-bench-actions-" + uuid.NewString(), variant: variant}
	chosen, err := examples.Parse("all")
	require.NoError(tb, err)
	o := chosen.Options()
	if variant == stackFastPath {
		o.Register = fastPathExamples(chosen)
	}
	if variant == stackSteer {
		o.Register = withSteerAgent(o.Register)
	}
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	running := make(chan app.Running, 1)
	o.Started = func(r app.Running) { running <- r }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// Over Redis, as a deployment of several processes runs: the chat route's readers of the
	// turns they start ask the session nothing (sessions.FollowOptions.Started).
	redis := redistest.Start(tb)
	cfg := app.Config{TemporalAddress: p.Address(), TaskQueue: s.queue, HTTPAddr: "127.0.0.1:0", FakeModels: true, RedisURL: redis.URL()}
	if variant == stackLedger {
		cfg.AgentBudget = contracts.ScopeBudget{MaxTokens: 100_000_000}
	}
	if variant == stackBudget {
		cfg.Budget = contracts.Limits{MaxTokens: 10_000_000, MaxCost: 1000}
		cfg.SessionBudget = contracts.Limits{MaxTokens: 100_000_000, MaxCost: 10_000}
		cfg.Prices = map[string]contracts.Price{"openai:gpt-4.1-mini": {Input: 0.4, Output: 1.6}}
	}
	go func() { done <- app.Run(ctx, cfg, o) }()
	select {
	case st := <-running:
		s.kc = &kortyxwire.Client{ChatURL: "http://" + st.HTTPAddr + "/api/chat"}
	case err := <-done:
		cancel()
		tb.Fatal(err)
	}
	s.stop = func() {
		cancel()
		<-done
		_ = p.Close()
	}
	return s
}

// turn runs one new session's turn of sc: the prompt, then an answer to every question (the
// first option, or "Ada" for a text question) until a response ends without one. It returns
// the number of answers.
func (s *actionsStack) turn(ctx context.Context, sc chatScenario) (int, error) {
	session := uuid.NewString()
	msgs := []kortyxwire.Message{{Role: "user", Content: sc.prompt}}
	for answers := 0; answers < 5; answers++ {
		chunks, err := s.kc.Send(ctx, session, sc.workflow, msgs)
		if err != nil {
			return answers, err
		}
		var ask kortyxwire.Chunk
		for _, ch := range chunks {
			switch ch.Type() {
			case "error":
				return answers, fmt.Errorf("%s: error chunk %v", sc.name, ch)
			case "interrupt":
				ask = ch
			}
		}
		if len(chunks) == 0 || chunks[len(chunks)-1].Type() != "done" {
			return answers, fmt.Errorf("%s: a response without done: %v", sc.name, chunks)
		}
		if ask == nil {
			return answers, nil
		}
		var selected []string
		text := ""
		in, _ := ask["input"].(map[string]any)
		if opts, _ := in["options"].([]any); len(opts) > 0 {
			first, _ := opts[0].(map[string]any)
			id, _ := first["id"].(string)
			selected = []string{id}
		} else {
			text = "Ada"
		}
		msgs = append(msgs, kortyxwire.Message{Role: "assistant", Content: ""}, kortyxwire.Answer(ask, selected, text))
	}
	return 5, fmt.Errorf("%s: still asking after 5 answers", sc.name)
}

// measure runs sc once and counts its actions: the proxy's calls during the turn, and the
// histories of every workflow started on the stack's queue since the turn began (its session,
// its run, the run's children).
func (s *actionsStack) measure(ctx context.Context, sc chatScenario) (actions, int, error) {
	return s.measureTurn(ctx, sc.name, func(ctx context.Context) (int, error) { return s.turn(ctx, sc) })
}

// measureTurn counts the actions of turn (see measure), which returns its number of answers.
func (s *actionsStack) measureTurn(ctx context.Context, name string, turn func(ctx context.Context) (int, error)) (actions, int, error) {
	a := actions{Scenario: name, Variant: s.variant}
	// The workflows of earlier turns (the previous turn's waitIdle saw them all) are left out.
	earlier, err := s.list(ctx)
	if err != nil {
		return a, 0, err
	}
	seen := map[[2]string]bool{}
	for _, ex := range earlier {
		seen[ex] = true
	}
	before := s.proxy.Counts()
	answers, err := turn(ctx)
	if err != nil {
		return a, answers, err
	}
	// The run's last workflow task (its status upsert, its completion) and the session's
	// bookkeeping may follow the done chunk: wait until every workflow of the turn is idle.
	all, err := s.waitIdle(ctx)
	if err != nil {
		return a, answers, err
	}
	var execs [][2]string
	for _, ex := range all {
		if !seen[ex] {
			execs = append(execs, ex)
		}
	}
	a.addRPC(s.proxy.Since(before))
	for _, ex := range execs {
		if err := a.addHistory(ctx, s.c, ex[0], ex[1]); err != nil {
			return a, answers, err
		}
	}
	a.sum()
	return a, answers, nil
}

// list returns the (workflow ID, run ID) of every workflow on the stack's queue.
func (s *actionsStack) list(ctx context.Context) ([][2]string, error) {
	var out [][2]string
	var token []byte
	for {
		resp, err := s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = '%s'", s.queue), NextPageToken: token})
		if err != nil {
			return nil, err
		}
		for _, ex := range resp.GetExecutions() {
			out = append(out, [2]string{ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// waitIdle waits until no workflow on the queue has a workflow task or an activity pending,
// twice in a row (visibility lags a start a little), and returns them all.
func (s *actionsStack) waitIdle(ctx context.Context) ([][2]string, error) {
	quiet := 0
	for {
		out, err := s.list(ctx)
		if err != nil {
			return nil, err
		}
		pending := false
		for _, ex := range out {
			d, err := s.c.DescribeWorkflow(ctx, ex[0], ex[1])
			if err != nil {
				return nil, err
			}
			if raw := d.RawResponse; raw.GetPendingWorkflowTask() != nil || len(raw.GetPendingActivities()) > 0 {
				pending = true
			}
		}
		if quiet++; pending {
			quiet = 0
		}
		if quiet >= 2 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// measureRun counts the actions of one workflow execution of the shared environment (no
// proxy: these workloads neither heartbeat nor are queried).
func (e *env) measureRun(ctx context.Context, scenario, variant, id string) (actions, error) {
	a := actions{Scenario: scenario, Variant: variant}
	if err := a.addHistory(ctx, e.c, id, ""); err != nil {
		return a, err
	}
	a.sum()
	return a, nil
}

// questionRound is the Kortyx interrupt workflow (a question answered by update, then one
// structured-data chunk) and its hand-written equivalent, each run once.
func (e *env) questionRound(ctx context.Context) (k, p actions, err error) {
	for _, v := range []string{"kortyx", "plain"} {
		ask := e.askKortyx
		if v == "plain" {
			ask = e.askPlain
		}
		w, err := ask(ctx, byUpdate)
		if err != nil {
			return k, p, err
		}
		if err := w.send(ctx); err != nil {
			return k, p, err
		}
		if err := w.finish(ctx); err != nil {
			return k, p, err
		}
		a, err := e.measureRun(ctx, "question answered by update (BenchmarkInterruptRoundTrip's workflow)", v, w.id)
		if err != nil {
			return k, p, err
		}
		if v == "kortyx" {
			k = a
		} else {
			p = a
		}
	}
	return k, p, nil
}

// loopStep is the marginal actions of one tool-loop step (the 50-step loop's workload, a
// regular tool): (run of 20 steps − run of 10 steps) ÷ 10, Kortyx and plain.
func (e *env) loopStep(ctx context.Context) (k, p actions, err error) {
	const name = "ten tool-loop steps (regular tool; a 20-step run minus a 10-step run)"
	run := func(variant string, n int) (actions, error) {
		var id string
		var err error
		if variant == "kortyx" {
			id, _, err = e.runLoopN(ctx, n, loop50Bytes)
		} else {
			id, _, err = e.runPlainLoopN(ctx, n, loop50Bytes)
		}
		if err != nil {
			return actions{}, err
		}
		return e.measureRun(ctx, name, variant, id)
	}
	for _, v := range []string{"kortyx", "plain"} {
		a10, err := run(v, 10)
		if err != nil {
			return k, p, err
		}
		a20, err := run(v, 20)
		if err != nil {
			return k, p, err
		}
		d := a20.sub(a10) // 10 steps' worth
		if v == "kortyx" {
			k = d
		} else {
			p = d
		}
	}
	return k, p, nil
}

// fastRounds is the fast path's rows of the question round and the tool-loop step: the ask
// workload of BenchmarkFastPathAnswerToChunk answered by update ("fastpath"), and ten steps of
// BenchmarkFastPathToolLoop50's loop (a 20-step run minus a 10-step run) with the tool a
// regular activity ("fastpath") and a local one ("fastpath-local").
func (e *env) fastRounds(ctx context.Context, tb testing.TB) ([]actions, error) {
	w, err := e.askFast(ctx, tb, byUpdate, true)
	if err != nil {
		return nil, err
	}
	if err := w.send(ctx); err != nil {
		return nil, err
	}
	if err := w.finish(ctx); err != nil {
		return nil, err
	}
	q, err := e.measureRun(ctx, "question answered by update (BenchmarkInterruptRoundTrip's workflow)", "fastpath", w.id)
	if err != nil {
		return nil, err
	}
	out := []actions{q}
	const name = "ten tool-loop steps (regular tool; a 20-step run minus a 10-step run)"
	for _, v := range []struct{ loop, variant string }{{variantFast, "fastpath"}, {variantFastLocal, "fastpath-local"}} {
		var a [2]actions
		for i, n := range []int{10, 20} {
			id, _, err := e.runFastLoop(ctx, tb, v.loop, n)
			if err != nil {
				return nil, err
			}
			if a[i], err = e.measureRun(ctx, name, v.variant, id); err != nil {
				return nil, err
			}
		}
		out = append(out, a[1].sub(a[0]))
	}
	return out, nil
}

// BenchmarkActionsPerTurn counts the billable Temporal actions of each example agent's turn
// through the chat route (a new session: the prompt and an answer to each question), of a
// question answered by update against its hand-written workflow, and of ten tool-loop steps
// against the plain loop; it prints one "Actions {json}" line per row (bench/cmd/report) and
// reports actions/turn. Kortyx rows of the chat route have a "floor" row beside them: the
// hand-written minimum by rule. Run it with -benchtime 1x.
func BenchmarkActionsPerTurn(b *testing.B) {
	e := setup(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := e.startActionsStack(b, stackKortyx)
	defer s.stop()
	fs := e.startActionsStack(b, stackFastPath)
	defer fs.stop()
	bs := e.startActionsStack(b, stackBudget)
	defer bs.stop()
	ss := e.startActionsStack(b, stackSteer)
	defer ss.stop()
	for range b.N {
		// A turn with a steering message beside the same turn without (TestActionsSteer).
		for _, steer := range []bool{false, true} {
			name := map[bool]string{false: "steer-agent", true: "steered"}[steer]
			a, _, err := ss.measureTurn(ctx, name, func(ctx context.Context) (int, error) { return ss.steerTurn(ctx, steer) })
			if err != nil {
				b.Fatal(err)
			}
			fmt.Println(a.line())
			b.ReportMetric(float64(a.Total), "actions/"+name)
		}
		for _, sc := range chatScenarios {
			a, answers, err := s.measure(ctx, sc)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Println(a.line())
			fmt.Println(floor(a, answers).line())
			b.ReportMetric(float64(a.Total), "actions/"+strings.Fields(sc.name)[0])
			f, _, err := fs.measure(ctx, sc)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Println(f.line())
			g, _, err := bs.measure(ctx, sc)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Println(g.line())
		}
		fast, err := e.fastRounds(ctx, b)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range fast {
			fmt.Println(f.line())
		}
		k, p, err := e.questionRound(ctx)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Println(k.line())
		fmt.Println(p.line())
		k, p, err = e.loopStep(ctx)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Println(k.line())
		fmt.Println(p.line())
		b.ReportMetric(float64(k.Total)/10, "actions/loop-step")
	}
}

// TestActionsAgree runs the hello turn through the counting stack and checks the counts the
// turn must have whatever the engine's cuts: the session started by the chat route's
// update-with-start, the run started by the route (not as the session's child), an accepted
// update per chat request, no activity; and that the proxy saw the update-with-start and the
// run's start. Then the question round: one start and one
// update in each variant.
func TestActionsAgree(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := e.startActionsStack(t, stackKortyx)
	defer s.stop()
	a, answers, err := s.measure(ctx, chatScenarios[0])
	require.NoError(t, err)
	t.Log(a.line())
	require.Equal(t, 1, answers)
	require.Equal(t, []string{"kortyx.Run", "kortyx.Session"}, sorted(a.Types), "the session and its run")
	require.Equal(t, 2, a.Starts, "the session, started by the chat route's update, and the run, started by the chat route")
	require.Zero(t, a.Children, "the session leaves its run's start to the route: no child")
	require.Zero(t, a.SessionChildren)
	require.Equal(t, 2, a.Updates, "the prompt (update-with-start) and the answer")
	require.Equal(t, int64(1), a.RPC["ExecuteMultiOperation"], "one update-with-start")
	require.Equal(t, int64(1), a.RPC["StartWorkflowExecution"], "the run's start")
	require.Zero(t, a.Queries, "over Redis, no query on the way of the prompt or the answer")
	require.Zero(t, a.Retries)
	require.Zero(t, a.Activities, "hello calls no model and no tool")
	require.Equal(t, 2, a.MarkerTasks, "the run publishes the question and the end by local activity; it starts without a marker (its session records its start in its input)")
	require.Equal(t, a.Starts+a.Children+a.ContinueAsNew+a.Signals+a.Updates+a.Queries+a.Activities+a.Heartbeats+a.Timers+a.MarkerTasks+a.Upserts+a.Children, a.Total)
	k, p, err := e.questionRound(ctx)
	require.NoError(t, err)
	t.Log(k.line(), p.line())
	require.Equal(t, 1, p.Starts)
	require.Equal(t, 1, p.Updates)
	require.Equal(t, 1, k.Starts)
	require.Equal(t, 1, k.Updates)
}

// TestActionsFastPath runs the support turn (two model passes around lookup_order, the
// approval, refund, a last pass) on the regular and the fast-path stack: the fast path turns the
// model passes' activity attempts into markers and leaves the tool calls and everything of the
// session as they were.
func TestActionsFastPath(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := e.startActionsStack(t, stackKortyx)
	defer reg.stop()
	fast := e.startActionsStack(t, stackFastPath)
	defer fast.stop()
	r, _, err := reg.measure(ctx, chatScenarios[1])
	require.NoError(t, err)
	f, _, err := fast.measure(ctx, chatScenarios[1])
	require.NoError(t, err)
	t.Log(r.line(), f.line())
	require.Equal(t, "fastpath", f.Variant)
	require.Equal(t, 5, r.Activities, "three model passes and two tool calls, each an activity task")
	require.Equal(t, 2, f.Activities, "the two tool calls; the passes are local activities")
	require.Zero(t, f.Heartbeats, "local activities send no heartbeat")
	for _, k := range []struct {
		name string
		r, f int
	}{{"starts", r.Starts, f.Starts}, {"children", r.Children, f.Children}, {"signals", r.Signals, f.Signals}, {"updates", r.Updates, f.Updates}, {"upserts", r.Upserts, f.Upserts}} {
		require.Equal(t, k.r, k.f, k.name)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestActionsBudget (issue 34): a run's budget of tokens and money lives in the run's workflow
// state, and its session's rides on the run's start input and its checkpoint reports. The
// support turn (three model passes, two tool calls, an approval) costs the same actions of
// every kind with both as without them.
func TestActionsBudget(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := e.startActionsStack(t, stackKortyx)
	defer reg.stop()
	budget := e.startActionsStack(t, stackBudget)
	defer budget.stop()
	r, _, err := reg.measure(ctx, chatScenarios[1])
	require.NoError(t, err)
	b, _, err := budget.measure(ctx, chatScenarios[1])
	require.NoError(t, err)
	t.Log(r.line(), b.line())
	require.Equal(t, stackBudget, b.Variant)
	require.Equal(t, 5, b.Activities, "three model passes and two tool calls")
	// The budget stack's run did run under its budget: its result has the spend, priced.
	runs, err := budget.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("TaskQueue = '%s' AND WorkflowType = '%s'", budget.queue, contracts.RunWorkflowName)})
	require.NoError(t, err)
	require.Len(t, runs.GetExecutions(), 1)
	ex := runs.GetExecutions()[0].GetExecution()
	var res contracts.RunResult
	require.NoError(t, budget.c.GetWorkflow(ctx, ex.GetWorkflowId(), ex.GetRunId()).Get(ctx, &res))
	require.NotNil(t, res.State.Runtime.Spend, "the support run's result has its spend")
	require.Equal(t, res.State.Runtime.TokenUsage.Total, res.State.Runtime.Spend.Tokens)
	require.Positive(t, res.State.Runtime.Spend.Cost)
	// And under its session's budget: the session gave it with the run's start input.
	it := budget.c.GetWorkflowHistory(ctx, ex.GetWorkflowId(), ex.GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	first, err := it.Next()
	require.NoError(t, err)
	var start protocol.RunStart
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(first.GetWorkflowExecutionStartedEventAttributes().GetInput(), &start))
	require.NotNil(t, start.SessionBudget)
	require.Equal(t, 100_000_000, start.SessionBudget.Limits.MaxTokens)
	for _, k := range []struct {
		name string
		r, b int
	}{{"starts", r.Starts, b.Starts}, {"children", r.Children, b.Children}, {"signals", r.Signals, b.Signals},
		{"updates", r.Updates, b.Updates}, {"activities", r.Activities, b.Activities}, {"timers", r.Timers, b.Timers},
		{"marker tasks", r.MarkerTasks, b.MarkerTasks}, {"upserts", r.Upserts, b.Upserts}, {"workflow tasks", r.WorkflowTasks, b.WorkflowTasks},
		{"events", r.Events, b.Events}, {"total without heartbeats", r.Total - r.Heartbeats, b.Total - b.Heartbeats}} {
		require.Equal(t, k.r, k.b, k.name)
	}
}

// TestActionsLedger (issue 34): what an agent's shared budget adds to a turn. The support turn
// (three model passes, two tool calls, an approval) runs with and without the worker's agent
// budget (KORTYX_AGENT_MAX_TOKENS, large: the run reserves one batch of a tenth of it). The
// turn under the budget starts the agent's ledger (once per ledger), makes one reservation
// (one update, sent by the first pass's activity) and settles once (one signal): nothing else
// changes.
func TestActionsLedger(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := e.startActionsStack(t, stackKortyx)
	defer reg.stop()
	ledger := e.startActionsStack(t, stackLedger)
	defer ledger.stop()
	r, _, err := reg.measure(ctx, chatScenarios[1])
	require.NoError(t, err)
	l, _, err := ledger.measure(ctx, chatScenarios[1])
	require.NoError(t, err)
	t.Log(r.line(), l.line())
	require.Contains(t, l.Types, protocol.LedgerWorkflowName)
	require.Equal(t, r.Starts+1, l.Starts, "the ledger's start (once per ledger)")
	require.Equal(t, r.Updates+1, l.Updates, "one reservation")
	require.Equal(t, r.Signals+1, l.Signals, "one settlement")
	for _, k := range []struct {
		name string
		r, l int
	}{{"children", r.Children, l.Children}, {"activities", r.Activities, l.Activities}, {"timers", r.Timers, l.Timers},
		{"marker tasks", r.MarkerTasks, l.MarkerTasks}, {"upserts", r.Upserts, l.Upserts}} {
		require.Equal(t, k.r, k.l, k.name)
	}
	require.Equal(t, r.Total-r.Heartbeats+3, l.Total-l.Heartbeats, "three actions more: the ledger's start, the reservation, the settlement")
}
