package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// failingCaller is a client interceptor whose start of a run fails. With died, it plays an API
// process dying between the update that accepts a turn and its run's start: the stop of the
// turn that follows fails too (nothing it sends after the update reaches Temporal).
type failingCaller struct {
	interceptor.ClientInterceptorBase
	died bool
}

func (f *failingCaller) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	return &failingOutbound{ClientOutboundInterceptorBase: interceptor.ClientOutboundInterceptorBase{Next: next}, died: f.died}
}

type failingOutbound struct {
	interceptor.ClientOutboundInterceptorBase
	died bool
}

func (f *failingOutbound) ExecuteWorkflow(ctx context.Context, in *interceptor.ClientExecuteWorkflowInput) (client.WorkflowRun, error) {
	if in.WorkflowType == contracts.RunWorkflowName {
		return nil, serviceerror.NewInternal("the start failed")
	}
	return f.Next.ExecuteWorkflow(ctx, in)
}

func (f *failingOutbound) UpdateWorkflow(ctx context.Context, in *interceptor.ClientUpdateWorkflowInput) (client.WorkflowUpdateHandle, error) {
	if f.died && in.UpdateName == protocol.SessionStopUpdate {
		return nil, errors.New("the process died")
	}
	return f.Next.UpdateWorkflow(ctx, in)
}

// leavingCaller is a client interceptor that plays a client leaving right after the session
// completed its start-turn update: it cancels the caller's context and returns its error.
type leavingCaller struct {
	interceptor.ClientInterceptorBase
	cancel context.CancelFunc
}

func (l *leavingCaller) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	return &leavingOutbound{ClientOutboundInterceptorBase: interceptor.ClientOutboundInterceptorBase{Next: next}, cancel: l.cancel}
}

type leavingOutbound struct {
	interceptor.ClientOutboundInterceptorBase
	cancel context.CancelFunc
}

func (l *leavingOutbound) UpdateWithStartWorkflow(ctx context.Context, in *interceptor.ClientUpdateWithStartWorkflowInput) (client.WorkflowUpdateHandle, error) {
	h, err := l.Next.UpdateWithStartWorkflow(ctx, in)
	if err != nil {
		return h, err
	}
	var res any
	if err := h.Get(ctx, &res); err != nil {
		return h, err
	}
	l.cancel()
	return nil, ctx.Err()
}

// failingService is a session service of the worker whose starts of runs fail (see
// failingCaller).
func failingService(t *testing.T, e *inproc, died bool) *sessions.Service {
	t.Helper()
	c, err := client.NewClientFromExisting(e.c, client.Options{Interceptors: []interceptor.ClientInterceptor{&failingCaller{died: died}}, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	svc, err := sessions.New(sessions.Options{Client: c, Broker: e.broker, TaskQueue: e.tq})
	require.NoError(t, err)
	return svc
}

// ghostTurn starts a prompt turn of session through a service whose process "dies" after the
// session accepted the turn: the turn is active, its run does not exist.
func ghostTurn(t *testing.T, e *inproc, session, clientTurnID string) string {
	t.Helper()
	return ghostTurnOf(t, e, session, clientTurnID, testagents.EffectsWorkflow, "hello")
}

// ghostTurnOf is ghostTurn with agent wf and input text.
func ghostTurnOf(t *testing.T, e *inproc, session, clientTurnID, wf, text string) string {
	t.Helper()
	b, _ := json.Marshal(text)
	_, err := failingService(t, e, true).Start(context.Background(), session, sessions.TurnRequest{Workflow: wf, Input: b, ClientTurnID: clientTurnID})
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(err), "%v", err)
	v := sessionView(t, e, session)
	require.NotNil(t, v.Active, "the session accepted the turn")
	_, err = e.c.DescribeWorkflow(context.Background(), v.Active.RunID, "")
	var nf *serviceerror.NotFound
	require.ErrorAs(t, err, &nf, "its run was never started")
	return v.Active.RunID
}

// parentOf is the workflow id of the execution that started run as its child ("" : a client
// started it).
func parentOf(t *testing.T, run string) string {
	t.Helper()
	return history(t, tc, run).Events[0].GetWorkflowExecutionStartedEventAttributes().GetParentWorkflowExecution().GetWorkflowId()
}

// The session service starts a prompt's run itself (the session leaves it to its caller: no
// child). A caller that dies between the session's update and the run's start leaves a turn
// whose run does not exist; the session starts it at the next request that needs it, and the
// run never starts twice: a retry of the same prompt reattaches to the run the session
// started; a message refused as busy more than 5 s after the turn started is refused after the
// session started the run; a stop starts and cancels it, and a late start of the dead caller's
// is refused. A client that leaves after the update still gets its run.
func TestSessionStartsTheRunOfADeadCaller(t *testing.T) {
	e := startWorker(t, tc)
	ctx := context.Background()
	svc := e.service(t)

	t.Run("healthy", func(t *testing.T) {
		session := "launch-ok-" + taskQueue(t)
		ts := turn(t, e, session, testagents.EffectsWorkflow, "hello")
		resp, _ := nextResponse(t, e.follow, ts.RunID, 0)
		require.Equal(t, []string{"structured-data", "interrupt", "checkpoint", "done"}, types(resp))
		require.Empty(t, parentOf(t, ts.RunID), "started by the service, not as the session's child")
		recordHistory(t, tc, "launch-session", protocol.SessionWorkflowID(session))
		recordHistory(t, tc, "launch-run", ts.RunID)
		require.Equal(t, session, searchAttr(t, ts.RunID, contracts.SearchAttributeSession))
		require.Equal(t, testagents.EffectsWorkflow, searchAttr(t, ts.RunID, contracts.SearchAttributeWorkflow))
	})
	t.Run("retry", func(t *testing.T) {
		session := "launch-retry-" + taskQueue(t)
		run := ghostTurn(t, e, session, "ct-1")
		b, _ := json.Marshal("hello")
		ts, err := svc.Start(ctx, session, sessions.TurnRequest{Workflow: testagents.EffectsWorkflow, Input: b, ClientTurnID: "ct-1"})
		require.NoError(t, err)
		require.True(t, ts.Reattached)
		require.Equal(t, run, ts.RunID)
		resp, _ := nextResponse(t, e.follow, run, 0)
		require.Equal(t, []string{"structured-data", "interrupt", "checkpoint", "done"}, types(resp), "the turn runs once, in full")
		require.Equal(t, protocol.SessionWorkflowID(session), parentOf(t, run), "the session started it")
		require.Equal(t, 1, countRuns(t, session))
		recordHistory(t, tc, "launch-healed-retry-session", protocol.SessionWorkflowID(session))
	})
	t.Run("busy", func(t *testing.T) {
		session := "launch-busy-" + taskQueue(t)
		run := ghostTurn(t, e, session, "")
		b, _ := json.Marshal("hello again")
		_, err := svc.Start(ctx, session, sessions.TurnRequest{Workflow: testagents.EffectsWorkflow, Input: b})
		require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(err), "%v", err)
		_, err = e.c.DescribeWorkflow(ctx, run, "")
		var nf *serviceerror.NotFound
		require.ErrorAs(t, err, &nf, "within the grace (5 s) the session presumes the run started")
		time.Sleep(5500 * time.Millisecond)
		_, err = svc.Start(ctx, session, sessions.TurnRequest{Workflow: testagents.EffectsWorkflow, Input: b})
		require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(err), "%v", err)
		resp, _ := nextResponse(t, e.follow, run, 0)
		require.Equal(t, []string{"structured-data", "interrupt", "checkpoint", "done"}, types(resp), "the accepted prompt is answered")
		eventually(t, 10*time.Second, "the turn to end", func() bool { return sessionView(t, e, session).Active == nil })
		require.Equal(t, 1, countRuns(t, session))
		recordHistory(t, tc, "launch-healed-busy-session", protocol.SessionWorkflowID(session))
	})
	t.Run("stop", func(t *testing.T) {
		session := "launch-stop-" + taskQueue(t)
		run := ghostTurn(t, e, session, "")
		stopped, err := svc.Stop(ctx, session, "")
		require.NoError(t, err)
		require.Equal(t, run, stopped)
		require.Nil(t, sessionView(t, e, session).Active)
		eventually(t, 10*time.Second, "the run to be cancelled", func() bool { return runStatus(t, run) == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED })
		// The dead caller's start, arriving late, is refused: the id is taken.
		_, err = e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: run, TaskQueue: e.tq,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE, WorkflowExecutionErrorWhenAlreadyStarted: true}, contracts.RunWorkflowName, protocol.RunStart{})
		var exists *serviceerror.WorkflowExecutionAlreadyStarted
		require.ErrorAs(t, err, &exists)
		require.Equal(t, 1, countRuns(t, session))
		recordHistory(t, tc, "launch-healed-stop-session", protocol.SessionWorkflowID(session))
	})
	t.Run("caller leaves", func(t *testing.T) {
		// The client leaves once the session accepted its turn, before the service started the
		// run: the service still starts it.
		session := "launch-leave-" + taskQueue(t)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		c, err := client.NewClientFromExisting(e.c, client.Options{Interceptors: []interceptor.ClientInterceptor{&leavingCaller{cancel: cancel}}, Logger: quietLogger()})
		require.NoError(t, err)
		defer c.Close()
		leaving, err := sessions.New(sessions.Options{Client: c, Broker: e.broker, TaskQueue: e.tq})
		require.NoError(t, err)
		b, _ := json.Marshal("hello")
		_, err = leaving.Start(cctx, session, sessions.TurnRequest{Workflow: testagents.EffectsWorkflow, Input: b})
		require.ErrorIs(t, err, context.Canceled)
		v := sessionView(t, e, session)
		require.NotNil(t, v.Active, "the session accepted the turn")
		resp, _ := nextResponse(t, e.follow, v.Active.RunID, 0)
		require.Equal(t, []string{"structured-data", "interrupt", "checkpoint", "done"}, types(resp), "its run was started and answers")
		require.Empty(t, parentOf(t, v.Active.RunID), "by the service")
	})
	t.Run("start fails", func(t *testing.T) {
		// A start that fails while the caller lives: the caller stops the turn, and the error
		// says to send the message again, without Temporal's text.
		session := "launch-fail-" + taskQueue(t)
		b, _ := json.Marshal("hello")
		_, err := failingService(t, e, false).Start(ctx, session, sessions.TurnRequest{Workflow: testagents.EffectsWorkflow, Input: b})
		var ce *contracts.Error
		require.ErrorAs(t, err, &ce)
		require.Equal(t, contracts.CodeExecutionFailed, ce.Code)
		require.True(t, ce.Retryable)
		require.Equal(t, "The turn's run could not be started, so the turn was stopped; send the message again.", ce.Message)
		require.Nil(t, sessionView(t, e, session).Active, "no turn is left active")
		// The session is free: the message sent again runs.
		ts := turn(t, e, session, testagents.EffectsWorkflow, "hello")
		resp, _ := nextResponse(t, e.follow, ts.RunID, 0)
		require.Equal(t, []string{"structured-data", "interrupt", "checkpoint", "done"}, types(resp))
	})
}

// searchAttr is the keyword search attribute name of workflow id.
func searchAttr(t *testing.T, id, name string) string {
	t.Helper()
	d, err := tc.DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	var v string
	if p := d.RawResponse.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[name]; p != nil {
		require.NoError(t, json.Unmarshal(p.GetData(), &v))
	}
	return v
}

// runStatus is the execution status of workflow id.
func runStatus(t *testing.T, id string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	d, err := tc.DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	return d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
}

// sessionRuns counts the runs of session that visibility lists (by their KortyxSession).
func sessionRuns(t *testing.T, session string) int {
	t.Helper()
	r, err := tc.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
		Query: contracts.SearchAttributeSession + " = '" + session + "' AND WorkflowType = '" + contracts.RunWorkflowName + "'"})
	require.NoError(t, err)
	return int(r.GetCount())
}

// countRuns counts the runs of session once visibility lists one (it may lag).
func countRuns(t *testing.T, session string) int {
	t.Helper()
	eventually(t, 10*time.Second, "the session's runs to be listed", func() bool { return sessionRuns(t, session) > 0 })
	return sessionRuns(t, session)
}

// A steering message sent while the running turn's run was never started (its caller died):
// the session's signal to the run fails, so the session starts the run and sends the message
// again; the run takes it in at its next model pass.
func TestSessionStartsTheRunOfADeadCallerForASteer(t *testing.T) {
	model := fake.NewResponder(steerModel(2 * time.Second)).WithID("fake")
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: "steerheal", Version: "1",
		Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "reason", Model: providers.Model("fake:test"), Input: in.Text()})
			return workflows.NodeResult{}, err
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	w := newWorker(tc, e.tq, reg, &activities.Activities{Stream: e.broker, Providers: providers.NewSet(model)})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	session := "launch-steer-" + e.tq
	run := ghostTurnOf(t, e, session, "", "steerheal", slowPrompt)

	b, _ := json.Marshal(steerText)
	ts, err := newService(t, tc, e.broker, e.tq).Start(context.Background(), session, sessions.TurnRequest{Workflow: "steerheal", Input: b, Busy: sessions.BusySteer})
	require.NoError(t, err)
	require.Equal(t, sessions.BusySteer, ts.Kind)
	require.Equal(t, run, ts.RunID, "the message went to the running turn's run")
	resp, _ := nextResponse(t, e.follow, run, 0)
	require.Equal(t, "Working slowly. EU store it is.", sessions.Buffer(resp).Text)
	require.Equal(t, protocol.SessionWorkflowID(session), parentOf(t, run), "the session started the run")
	require.Equal(t, 2, model.Calls(), "the slow pass, then the pass that took the message in")
	require.Equal(t, steerText, lastUserText(model.Requests()[1].Messages))
}
