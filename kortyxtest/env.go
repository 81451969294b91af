package kortyxtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
)

// runID is the workflow ID of the run in Temporal's test environment, hence its run id and the
// id of its stream.
const runID = "default-test-workflow-id"

// Options configure an [Env]. The zero value runs agents that call no model and no tool.
type Options struct {
	// Model answers the model passes of hooks.Reason: usually a scripted fake
	// (providers/fake: fake.New or fake.NewResponder). It is the default provider.
	Model providers.Provider
	// DefaultModel is the model id of nodes that name none.
	DefaultModel string
	// Tools are the tools the model may call.
	Tools *tools.Set
	// Logger receives the test environment's logs. Default: warnings and errors on stderr.
	Logger log.Logger
	// DataConverter, when set, converts the run's payloads, e.g. the payload codec of your
	// workers (codec.DataConverter). Default: Temporal's.
	DataConverter converter.DataConverter
}

// Env runs the Kortyx run workflow of a registry in Temporal's test environment (time skipping,
// no server), with the activities and an in-memory broker, and answers the run's questions as
// the test tells it. The embedded [testsuite.TestWorkflowEnvironment] stays available for
// anything the kit does not cover (registering activities of your own, cancelling, queries).
//
// An Env runs one workflow, like the environment it embeds; create one per run. It sees
// questions through the environment's local activity completed listener: setting another one
// (SetOnLocalActivityCompletedListener) turns [Env.OnQuestion] off.
type Env struct {
	*testsuite.TestWorkflowEnvironment
	// Broker holds the run's stream: every chunk the run and its activities published.
	Broker stream.Broker

	errs    []error             // problems of the test's own answers, returned by Run
	answers map[string][]Answer // by hook id; "" answers any question
	sent    map[string]int      // answers sent, by request id
	seen    map[string]bool     // request ids in asked
	asked   []contracts.PendingRequest
	timed   int // callbacks of At that have not run yet
}

// New returns an environment with the run workflow of reg, the activities (publishing to
// [Env.Broker], with opts' model and tools) and the question answering of the kit installed.
func New(reg *workflows.Registry, opts Options) *Env {
	var s testsuite.WorkflowTestSuite
	logger := opts.Logger
	if logger == nil {
		logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	s.SetLogger(logger)
	e := &Env{
		TestWorkflowEnvironment: s.NewTestWorkflowEnvironment(),
		Broker:                  stream.NewMemory(stream.MemoryOptions{}),
		answers:                 map[string][]Answer{},
		sent:                    map[string]int{},
		seen:                    map[string]bool{},
	}
	if opts.DataConverter != nil {
		e.SetDataConverter(opts.DataConverter)
	}
	workflows.NewRunner(reg).Register(e.TestWorkflowEnvironment)
	acts := &activities.Activities{Stream: e.Broker, Tools: opts.Tools, DefaultModel: opts.DefaultModel}
	if opts.Model != nil {
		acts.Providers = providers.NewSet(opts.Model)
		acts.DefaultProvider = opts.Model.ID()
	}
	acts.Register(e.TestWorkflowEnvironment)
	// Every question is published by a local activity just before the run waits, so the end of
	// each local activity is where a new question can be seen.
	e.SetOnLocalActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) {
		e.RegisterDelayedCallback(e.answerPending, 0)
	})
	return e
}

// Run starts workflow with input (marshalled to JSON; a json.RawMessage is sent as is), runs it
// to its end in test time, and returns its result or its error (the code is
// contracts.CodeOf(err)).
//
// A problem of the test's own answers — a question with no answer queued ([Env.OnQuestion]), an
// answer due while the run is not waiting ([Env.AnswerAt]) — is returned instead of the run's
// outcome, as an error that names it.
func (e *Env) Run(workflow string, input any) (contracts.RunResult, error) {
	b, err := json.Marshal(input)
	if err != nil {
		return contracts.RunResult{}, fmt.Errorf("kortyxtest: the input of %s cannot be marshalled to JSON: %w", workflow, err)
	}
	return e.Execute(contracts.RunInput{Workflow: workflow, Input: b})
}

// Execute runs the run workflow with in (to set a session id, runtime context or messages) and
// returns its result or its error, as [Env.Run] does.
func (e *Env) Execute(in contracts.RunInput) (contracts.RunResult, error) {
	e.ExecuteWorkflow(contracts.RunWorkflowName, in)
	if len(e.errs) > 0 {
		return contracts.RunResult{}, errors.Join(e.errs...)
	}
	if !e.IsWorkflowCompleted() {
		return contracts.RunResult{}, fmt.Errorf("kortyxtest: the run of %s did not complete", in.Workflow)
	}
	var res contracts.RunResult
	if err := e.GetWorkflowError(); err != nil {
		return res, err
	}
	if err := e.GetWorkflowResult(&res); err != nil {
		return res, fmt.Errorf("kortyxtest: decoding the result of %s: %w", in.Workflow, err)
	}
	return res, nil
}

// Chunks returns the chunks published on the run's stream so far, in order.
func (e *Env) Chunks() []contracts.Chunk {
	// Reading a memory broker with a context that is never cancelled cannot fail.
	entries, _ := e.Broker.Read(context.Background(), runID, 0, 0)
	out := make([]contracts.Chunk, len(entries))
	for i, en := range entries {
		out[i] = en.Chunk
	}
	return out
}

// Types returns the types of the published chunks, in order ("interrupt", "done", …).
func (e *Env) Types() []string {
	chunks := e.Chunks()
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = string(c.Type)
	}
	return out
}

// View returns the run's state query ([contracts.RunView]): status, state, pending question,
// rejected answers.
func (e *Env) View() (contracts.RunView, error) {
	var view contracts.RunView
	v, err := e.QueryWorkflow(contracts.StateQueryName)
	if err != nil {
		return view, fmt.Errorf("kortyxtest: querying the run's state: %w", err)
	}
	if err := v.Get(&view); err != nil {
		return view, fmt.Errorf("kortyxtest: decoding the run's state: %w", err)
	}
	return view, nil
}

// Asked returns the questions the run asked, in the order it asked them (a question asked
// again after a rejected answer counts once).
func (e *Env) Asked() []contracts.PendingRequest {
	return append([]contracts.PendingRequest(nil), e.asked...)
}

// An Answer builds the response to a pending question (the token and request id come from it).
type Answer func(p contracts.PendingRequest) contracts.Response

// Text answers a text question with s.
func Text(s string) Answer {
	return func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Text: s}
	}
}

// Select answers a choice or multi-choice question with the option ids (also an approval:
// "approve" or "deny").
func Select(ids ...string) Answer {
	return func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Selected: ids}
	}
}

// Value answers a custom question with a JSON value.
func Value(v json.RawMessage) Answer {
	return func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: v}
	}
}

// Cancel cancels the run from its question (the run ends with cancelled + done).
func Cancel() Answer {
	return func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Cancel: true}
	}
}

// OnQuestion queues answers, sent by signal in order, for the questions whose id (the id given
// to hooks.Interrupt, AskText or Choose; "tool:<call id>" for a tool approval) is id; "" answers
// any question that has no answer queued under its own id. Each answer is sent as soon as the
// run waits, at the same test time. An answer the run rejects is recorded in its state
// ([Env.View] Rejections) and the next queued answer is sent.
//
// A question for which no answer is queued, while no callback of [Env.At] is still due, cancels
// the run and makes [Env.Run] return an error naming the question, so that a forgotten answer
// does not leave the run waiting until the test environment's timeout.
func (e *Env) OnQuestion(id string, answers ...Answer) {
	e.answers[id] = append(e.answers[id], answers...)
}

// At runs fn at test time d after the start. Use it rather than the embedded
// RegisterDelayedCallback for actions that answer or end a waiting run: while one is due, a
// question with no answer queued is left waiting for it.
func (e *Env) At(d time.Duration, fn func()) {
	e.timed++
	e.RegisterDelayedCallback(func() {
		e.timed--
		fn()
	}, d)
}

// AnswerAt sends the answer by signal at test time d; the run must be waiting then.
func (e *Env) AnswerAt(d time.Duration, a Answer) {
	e.At(d, func() {
		p, ok := e.pending(d)
		if !ok {
			return
		}
		e.SignalWorkflow(contracts.RespondName, a(p))
	})
}

// UpdateAt sends the answer by update at test time d and reports the update's outcome to done:
// the result, or the error of a rejected answer (its code is contracts.CodeOf(err)). The run
// must be waiting then.
func (e *Env) UpdateAt(d time.Duration, a Answer, done func(contracts.RespondResult, error)) {
	e.At(d, func() {
		p, ok := e.pending(d)
		if !ok {
			return
		}
		e.UpdateWorkflow(contracts.RespondName, "kortyxtest-"+d.String(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { done(contracts.RespondResult{}, err) },
			OnComplete: func(res any, err error) {
				out, _ := res.(contracts.RespondResult)
				done(out, err)
			},
		}, a(p))
	})
}

// pending returns the question the run waits on at test time d; without one, Run reports it.
func (e *Env) pending(d time.Duration) (contracts.PendingRequest, bool) {
	v, err := e.View()
	if err != nil {
		e.errs = append(e.errs, err)
		return contracts.PendingRequest{}, false
	}
	if v.Pending == nil {
		e.errs = append(e.errs, fmt.Errorf("kortyxtest: the run is not waiting for an answer at %s (status %s)", d, v.Status))
		return contracts.PendingRequest{}, false
	}
	return *v.Pending, true
}

// answerPending sends the next queued answer if the run waits on a question that has no answer
// in flight.
func (e *Env) answerPending() {
	if e.IsWorkflowCompleted() {
		return
	}
	v, err := e.View()
	if err != nil {
		e.errs = append(e.errs, err)
		e.CancelWorkflow()
		return
	}
	if v.Pending == nil {
		return
	}
	p := *v.Pending
	rejected := 0
	for _, r := range v.Rejections {
		if r.RequestID == p.RequestID {
			rejected++
		}
	}
	if e.sent[p.RequestID] > rejected {
		return // the last answer sent is still on its way
	}
	if !e.seen[p.RequestID] {
		e.seen[p.RequestID] = true
		e.asked = append(e.asked, p)
	}
	id := p.HookID
	if len(e.answers[id]) == 0 {
		id = ""
	}
	queue := e.answers[id]
	if len(queue) == 0 {
		if e.timed > 0 {
			return // an action of At is due
		}
		e.errs = append(e.errs, fmt.Errorf("kortyxtest: the run asks %q (node %s: %q) and no answer is queued for it: "+
			"add env.OnQuestion(%q, ...) or answer it with env.AnswerAt; the run was cancelled",
			p.HookID, p.Node, p.Input.Question, p.HookID))
		e.CancelWorkflow()
		return
	}
	e.answers[id] = queue[1:]
	e.sent[p.RequestID]++
	e.SignalWorkflow(contracts.RespondName, queue[0](p))
}
