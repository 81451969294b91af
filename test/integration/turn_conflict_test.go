package integration_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
)

// conflictOf checks that r is the 409 CLIENT_TURN_CONFLICT of clientTurnId ct, with no stream.
func conflictOf(t *testing.T, r sseResponse, session, ct, what string) {
	t.Helper()
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	eb := decodeError(t, r)
	require.Equal(t, contracts.CodeClientTurnConflict, eb.Failure.Code)
	require.Equal(t, "request", eb.Failure.Category)
	require.Equal(t, `clientTurnId "`+ct+`" was already used in session "`+session+`" with another `+what+
		`: a retry must repeat the same request; send a new `+what+` with a new clientTurnId.`, eb.Error)
	require.Empty(t, r.Events, "no stream")
}

// Two answers to one tool approval under one clientTurnId: the approval runs the tool; the
// denial is refused with 409 CLIENT_TURN_CONFLICT and never reads the approval's stream; the
// approval asked again reads its response again, and the tool ran once. The lifecycle
// callbacks ran once per turn: not for the denial, nor for the retry.
func TestChatSameClientTurnIDOtherAnswerConflicts(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	ask := chunkOf(t, c.send(t, prompt(session, "t1", testagents.ApprovalAgentWorkflow, "record something")).Chunks(t), contracts.ChunkInterrupt)

	approve := resumeBody(session, "t2", ask, "", map[string]any{"selected": "approve"})
	r := c.send(t, approve)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	first := r.Chunks(t)
	want := []string{"session", "tool-call-start", "tool-call-result", "text-start", "text-delta", "text-delta", "text-end", "checkpoint", "done"}
	require.Equal(t, want, types(first))
	require.Equal(t, `recorded {"recorded":"n1"}`, sessions.Buffer(first).Text)

	conflictOf(t, c.send(t, resumeBody(session, "t2", ask, "", map[string]any{"selected": "deny"})), session, "t2", "answer")

	again := c.send(t, approve)
	require.Equal(t, http.StatusOK, again.Status, again.Body)
	require.Equal(t, want, types(again.Chunks(t)), "an identical retry reads the same response")
	require.Equal(t, chunkOf(t, first, contracts.ChunkCheckpoint).ID, chunkOf(t, again.Chunks(t), contracts.ChunkCheckpoint).ID)
	require.Equal(t, []string{"tool n1"}, toolLines(t, c.effects), "the tool ran once")
	finals := f.finals(t, 2)
	require.Equal(t, []string{"t1", "t2"}, []string{finals[0].ClientTurnID, finals[1].ClientTurnID})
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.accepted, 2, "OnTurnAccepted: the prompt and the approval")
	require.Equal(t, "interrupt-response", f.accepted[1].Kind)
	require.Len(t, f.final, 2)
}

// The same, sent at once: exactly one answer claims the turn and streams its own response;
// the other is refused with 409 CLIENT_TURN_CONFLICT.
func TestChatSameClientTurnIDConcurrentAnswersOneConflicts(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	ask := chunkOf(t, c.send(t, prompt(session, "t1", testagents.ApprovalAgentWorkflow, "record something")).Chunks(t), contracts.ChunkInterrupt)
	picks := []string{"approve", "deny"}
	res := make([]sseResponse, len(picks))
	var wg sync.WaitGroup
	for i, pick := range picks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = c.send(t, resumeBody(session, "t2", ask, "", map[string]any{"selected": pick}))
		}()
	}
	wg.Wait()
	won := -1
	for i, r := range res {
		if r.Status == http.StatusOK {
			require.Equal(t, -1, won, "only one answer is taken")
			won = i
			continue
		}
		conflictOf(t, r, session, "t2", "answer")
	}
	require.NotEqual(t, -1, won, "one answer is taken")
	text := sessions.Buffer(res[won].Chunks(t)).Text
	if picks[won] == "approve" {
		require.Equal(t, []string{"tool n1"}, toolLines(t, c.effects))
		require.Equal(t, `recorded {"recorded":"n1"}`, text)
	} else {
		require.Empty(t, toolLines(t, c.effects), "the denial ran no tool")
		require.Equal(t, "recorded Tool call denied by user.", text)
	}
}

// A prompt's clientTurnId sent again with another message is refused with 409
// CLIENT_TURN_CONFLICT; the same message reads the same response, and nothing ran twice.
func TestChatSameClientTurnIDOtherMessageConflicts(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	hello := prompt(session, "t1", testagents.EchoWorkflow, "hello")
	r := c.send(t, hello)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, "Turn 1: hello", sessions.Buffer(r.Chunks(t)).Text)

	conflictOf(t, c.send(t, prompt(session, "t1", testagents.EchoWorkflow, "bye")), session, "t1", "message")

	again := c.send(t, hello)
	require.Equal(t, http.StatusOK, again.Status, again.Body)
	require.Equal(t, "Turn 1: hello", sessions.Buffer(again.Chunks(t)).Text)
	require.Equal(t, "Turn 2: bye", sessions.Buffer(c.send(t, prompt(session, "t2", "", "bye")).Chunks(t)).Text,
		"the refused message ran nothing")
}
