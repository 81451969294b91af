package sessions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// Agents returns the agents the program serves ([Options].Agents; nil without a catalog).
func (s *Service) Agents() []contracts.Agent {
	if s.o.Agents == nil {
		return nil
	}
	return s.o.Agents.Agents()
}

// Agent returns the served agent id (false when the catalog has none of that id).
func (s *Service) Agent(id string) (contracts.Agent, bool) {
	for _, a := range s.Agents() {
		if a.ID == id {
			return a, true
		}
	}
	return contracts.Agent{}, false
}

// TurnRun is the run of a session's turn as its Temporal history records it.
type TurnRun struct {
	RunID     string
	SessionID string
	// Workflow is the agent the turn started.
	Workflow string
	// Input is the turn's input.
	Input json.RawMessage
	// Answers are the answers the run received, by request id (by signal or by update).
	Answers map[string]contracts.Response
	// End is how the run ended: "" while it runs; contracts.StatusCompleted, StatusCancelled,
	// or StatusFailed for a failure, termination or timeout.
	End contracts.RunStatus
}

// TurnRun reads the history of run runID in one pass. Its first event gives the turn's session,
// agent and input; check (when not nil) is then asked about them, before anything else of the
// history is read, and its error ends the call: a caller asks its authorization hook there. The
// rest gives the answers and the end. A run id that is not a run of a session's turn (no such
// execution, another workflow type, a run started without a session) is NOT_FOUND, and check
// is not asked.
func (s *Service) TurnRun(ctx context.Context, runID string, check func(TurnRun) error) (TurnRun, error) {
	notFound := &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("Run %q is not the run of a session's turn.", runID),
		Details: map[string]any{"runId": runID}}
	if contracts.CheckID("runId", runID) != nil {
		return TurnRun{}, notFound
	}
	run := TurnRun{RunID: runID, Answers: map[string]contracts.Response{}}
	err := s.guard(ctx, func(ctx context.Context) error {
		it := s.o.Client.GetWorkflowHistory(ctx, runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		if !it.HasNext() {
			return notFound
		}
		ev, err := it.Next()
		if err != nil {
			if isNotFound(err) {
				return notFound
			}
			return err
		}
		a := ev.GetWorkflowExecutionStartedEventAttributes()
		var start protocol.RunStart
		if a.GetWorkflowType().GetName() != contracts.RunWorkflowName || !s.decode(a.GetInput(), &start) ||
			start.Session == nil || start.Session.SessionID == "" {
			return notFound
		}
		run.SessionID, run.Workflow, run.Input = start.Session.SessionID, start.Workflow, start.Input
		if check != nil {
			if err := check(run); err != nil {
				return err
			}
		}
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return err
			}
			s.apply(&run, ev)
		}
		return nil
	})
	return run, err
}

// apply adds what history event ev says of a turn's run to run: an answer, or its end.
func (s *Service) apply(run *TurnRun, ev *historypb.HistoryEvent) {
	switch a := ev.Attributes.(type) {
	case *historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes:
		var r contracts.Response
		if a.WorkflowExecutionSignaledEventAttributes.GetSignalName() == contracts.RespondName &&
			s.decode(a.WorkflowExecutionSignaledEventAttributes.GetInput(), &r) {
			run.Answers[r.RequestID] = r
		}
	case *historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes:
		in := a.WorkflowExecutionUpdateAcceptedEventAttributes.GetAcceptedRequest().GetInput()
		var r contracts.Response
		if in.GetName() == contracts.RespondName && s.decode(in.GetArgs(), &r) {
			run.Answers[r.RequestID] = r
		}
	case *historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes:
		run.End = contracts.StatusCompleted
	case *historypb.HistoryEvent_WorkflowExecutionCanceledEventAttributes:
		run.End = contracts.StatusCancelled
	case *historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes, *historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes,
		*historypb.HistoryEvent_WorkflowExecutionTimedOutEventAttributes:
		run.End = contracts.StatusFailed
	}
}

// RunView returns a run's state, status and pending question (its state query: it needs a
// running worker); NOT_FOUND for an unknown run.
func (s *Service) RunView(ctx context.Context, runID string) (contracts.RunView, error) {
	var v contracts.RunView
	err := s.guard(ctx, func(ctx context.Context) error {
		var err error
		v, err = kortyx.Query(ctx, s.o.Client, runID)
		return err
	})
	return v, err
}

// WaitRun waits until run runID has ended (whatever its end), or ctx ends.
func (s *Service) WaitRun(ctx context.Context, runID string) error {
	return s.guard(ctx, func(ctx context.Context) error {
		return s.o.Client.GetWorkflow(ctx, runID, "").Get(ctx, nil)
	})
}

// decode decodes the first payload of p into v with the service's data converter.
func (s *Service) decode(p *commonpb.Payloads, v any) bool {
	return p != nil && len(p.Payloads) > 0 && s.o.DataConverter.FromPayloads(p, v) == nil
}
