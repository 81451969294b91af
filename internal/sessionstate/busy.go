package sessionstate

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/internal/sessionapi"
)

// A message sent while a turn runs (docs/steering.md): with the policy "enqueue" it waits in
// State.Queue until the turns before it ended; with "steer" it is sent to the running turn's
// run and kept in State.Steers until the run reports the turn's end, which says which ones it
// took in (the others join the queue, in arrival order); with "interrupt" the running turn is
// stopped and its prompt and steering messages go into the new turn's conversation.

// QueuedResult is how a queued message's turn started (not durable: the session workflow's
// code sets it again on replay).
type QueuedResult struct {
	Started sessionapi.TurnStarted
	Err     error
}

// Busy reports whether a message now would wait: a turn is active, or messages are queued.
func (m *Machine) Busy() bool { return m.State.Active != nil || len(m.State.Queue) > 0 }

// Running reports whether the active turn's run is running (a message can steer it).
func (m *Machine) Running() bool { return m.State.Active != nil }

// Enqueue queues req (id is its id, kind the policy it came with) and returns it.
func (m *Machine) Enqueue(req sessionapi.TurnRequest, id, kind string, now time.Time) protocol.QueuedTurn {
	q := protocol.QueuedTurn{ID: id, Seq: m.nextSeq(), Kind: kind, Req: req, Since: now}
	m.State.Queue = append(m.State.Queue, q)
	return q
}

func (m *Machine) nextSeq() int {
	m.State.NextSeq++
	return m.State.NextSeq
}

// QueueReady reports whether the first queued message can start its turn (no turn is active).
func (m *Machine) QueueReady() bool { return m.State.Active == nil && len(m.State.Queue) > 0 }

// PopQueued takes the first queued message.
func (m *Machine) PopQueued() protocol.QueuedTurn {
	q := m.State.Queue[0]
	m.State.Queue = append([]protocol.QueuedTurn(nil), m.State.Queue[1:]...)
	if len(m.State.Queue) == 0 {
		m.State.Queue = nil
	}
	return q
}

// Started records how the turn of queued message id started.
func (m *Machine) Started(id string, r QueuedResult) {
	if m.results == nil {
		m.results = map[string]*QueuedResult{}
	}
	m.results[id] = &r
}

// Result is how the turn of queued message id started (nil: not yet).
func (m *Machine) Result(id string) *QueuedResult { return m.results[id] }

// AddSteer records req (id is its id) as a steering message of the active turn; it returns the
// message as the session keeps it and as it is sent to the run.
func (m *Machine) AddSteer(req sessionapi.TurnRequest, id string, now time.Time) (protocol.QueuedTurn, protocol.SteerMessage) {
	a := m.State.Active
	q := protocol.QueuedTurn{ID: id, Seq: m.nextSeq(), Kind: sessionapi.BusySteer, Req: req, Since: now, RunID: a.RunID, TurnIndex: a.TurnIndex}
	m.State.Steers = append(m.State.Steers, q)
	return q, protocol.SteerMessage{Steer: contracts.Steer{ID: id, ClientTurnID: req.ClientTurnID, Content: InputText(req.Input)}, TurnIndex: a.TurnIndex}
}

// SteerStarted is what a steering message's request returns.
func (m *Machine) SteerStarted(q protocol.QueuedTurn) sessionapi.TurnStarted {
	return sessionapi.TurnStarted{SessionID: m.In.SessionID, RunID: q.RunID, TurnIndex: q.TurnIndex, Kind: sessionapi.BusySteer, SteerID: q.ID, ClientTurnID: q.Req.ClientTurnID}
}

// SteerNotSent queues steering message id, which could not reach its run (it ended).
func (m *Machine) SteerNotSent(id string) {
	m.requeue(m.takeSteers(func(q protocol.QueuedTurn) bool { return q.ID == id }))
}

// requeueSteers moves the steering messages sent to run that it did not take in (taken: the
// ids of those it did) to the queue, in arrival order; the taken ones are forgotten.
func (m *Machine) requeueSteers(run string, taken []string) {
	m.requeue(slices.DeleteFunc(m.takeSteers(func(q protocol.QueuedTurn) bool { return q.RunID == run }),
		func(q protocol.QueuedTurn) bool { return slices.Contains(taken, q.ID) }))
}

// takeSteers removes the steering messages that match and returns them, in arrival order.
func (m *Machine) takeSteers(match func(q protocol.QueuedTurn) bool) []protocol.QueuedTurn {
	var out, kept []protocol.QueuedTurn
	for _, q := range m.State.Steers {
		if match(q) {
			out = append(out, q)
		} else {
			kept = append(kept, q)
		}
	}
	m.State.Steers = kept
	return out
}

// requeue adds steering messages to the queue, in arrival order.
func (m *Machine) requeue(steers []protocol.QueuedTurn) {
	for _, q := range steers {
		q.RunID, q.TurnIndex = "", 0
		m.State.Queue = append(m.State.Queue, q)
	}
	sort.SliceStable(m.State.Queue, func(i, j int) bool { return m.State.Queue[i].Seq < m.State.Queue[j].Seq })
}

// Interrupting stops the active turn a for the interrupting message req and returns the request
// of the turn that replaces it: req, whose input (a user message) becomes the stopped turn's
// prompt, the steering messages sent to it and req's own, in this order, separated by blank
// lines — an agent that reads only the turn's input sees them all. A request without prior
// messages gets the stopped turn's.
func (m *Machine) Interrupting(a *sessionapi.ActiveTurn, req sessionapi.TurnRequest) sessionapi.TurnRequest {
	var texts []string
	if p := m.State.Prompt; p != nil {
		if text := InputText(p.Input); text != "" {
			texts = append(texts, text)
		}
		if len(req.Messages) == 0 {
			req.Messages = append([]contracts.Message(nil), p.Messages...)
		}
	}
	for _, q := range m.takeSteers(func(q protocol.QueuedTurn) bool { return q.RunID == a.RunID }) {
		if text := InputText(q.Req.Input); text != "" {
			texts = append(texts, text)
		}
	}
	if len(texts) > 0 {
		b, _ := json.Marshal(strings.Join(append(texts, InputText(req.Input)), "\n\n"))
		req.Input = b
	}
	m.remember(a)
	m.State.Active, m.Resumed, m.State.Prompt = nil, nil, nil
	return req
}

// WaitingFor returns the queued or steering message sent with clientTurnID (nil: none).
func (m *Machine) WaitingFor(clientTurnID string) *protocol.QueuedTurn {
	if clientTurnID == "" {
		return nil
	}
	for _, list := range [][]protocol.QueuedTurn{m.State.Queue, m.State.Steers} {
		for i := range list {
			if list[i].Req.ClientTurnID == clientTurnID {
				return &list[i]
			}
		}
	}
	return nil
}

// checkWaiting refuses a request whose clientTurnId names a waiting message of other content.
func (m *Machine) checkWaiting(req sessionapi.TurnRequest) error {
	q := m.WaitingFor(req.ClientTurnID)
	if q == nil {
		return nil
	}
	t := sessionapi.ActiveTurn{ClientTurnID: q.Req.ClientTurnID, Kind: KindPrompt, Digest: q.Req.Digest}
	return m.conflict(&t, req.Digest)
}

// Queued reports whether waiting message q is in the queue (not steering).
func (m *Machine) Queued(id string) bool {
	for _, q := range m.State.Queue {
		if q.ID == id {
			return true
		}
	}
	return false
}

// InputText is a turn input as the text of a user message: a JSON string's value, or the JSON.
func InputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 {
		return ""
	}
	return string(raw)
}
