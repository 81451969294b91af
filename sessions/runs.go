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
}

// TurnRun reads the start of run runID (the first event of its history, nothing more): the
// session and agent of the turn it runs, and its input. A run id that is not a run of a
// session's turn (no such execution, another workflow type, a run started without a session)
// is NOT_FOUND, so that a caller can ask its authorization hook about the session before it
// reads anything else of the run.
func (s *Service) TurnRun(ctx context.Context, runID string) (TurnRun, error) {
	notFound := &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("Run %q is not the run of a session's turn.", runID),
		Details: map[string]any{"runId": runID}}
	if contracts.CheckID("runId", runID) != nil {
		return TurnRun{}, notFound
	}
	var start protocol.RunStart
	var typ string
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
		typ = a.GetWorkflowType().GetName()
		if !s.decode(a.GetInput(), &start) {
			return notFound
		}
		return nil
	})
	if err != nil {
		return TurnRun{}, err
	}
	if typ != contracts.RunWorkflowName || start.Session == nil || start.Session.SessionID == "" {
		return TurnRun{}, notFound
	}
	return TurnRun{RunID: runID, SessionID: start.Session.SessionID, Workflow: start.Workflow, Input: start.Input}, nil
}

// TurnRunAnswers reads the whole history of run runID: the answers it received, by request id
// (by signal or by update), and how it ended ("" while it runs; contracts.StatusCompleted,
// StatusCancelled, or StatusFailed for a failure, termination or timeout).
func (s *Service) TurnRunAnswers(ctx context.Context, runID string) (map[string]contracts.Response, contracts.RunStatus, error) {
	answers := map[string]contracts.Response{}
	var end contracts.RunStatus
	err := s.guard(ctx, func(ctx context.Context) error {
		it := s.o.Client.GetWorkflowHistory(ctx, runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return err
			}
			switch a := ev.Attributes.(type) {
			case *historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes:
				var r contracts.Response
				if a.WorkflowExecutionSignaledEventAttributes.GetSignalName() == contracts.RespondName &&
					s.decode(a.WorkflowExecutionSignaledEventAttributes.GetInput(), &r) {
					answers[r.RequestID] = r
				}
			case *historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes:
				in := a.WorkflowExecutionUpdateAcceptedEventAttributes.GetAcceptedRequest().GetInput()
				var r contracts.Response
				if in.GetName() == contracts.RespondName && s.decode(in.GetArgs(), &r) {
					answers[r.RequestID] = r
				}
			case *historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes:
				end = contracts.StatusCompleted
			case *historypb.HistoryEvent_WorkflowExecutionCanceledEventAttributes:
				end = contracts.StatusCancelled
			case *historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes, *historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes,
				*historypb.HistoryEvent_WorkflowExecutionTimedOutEventAttributes:
				end = contracts.StatusFailed
			}
		}
		return nil
	})
	return answers, end, err
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
