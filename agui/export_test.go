package agui

import (
	"encoding/json"
	"net/http/httptest"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
)

// Body is the response body the handler writes for chunks of a run of thread threadID and
// run runID whose input's state is state: the same writer and mapping, for the external tests
// that check it and feed it to AG-UI's client. schema answers a custom question's response
// schema.
func Body(threadID, runID string, state json.RawMessage, schema json.RawMessage, chunks ...contracts.Chunk) (string, error) {
	m := newMapper(threadID, runID, state)
	m.schema = func(string) json.RawMessage { return schema }
	rec := httptest.NewRecorder()
	sw, err := httpwire.NewSSEWriter(rec, httpwire.SSEOptions{OmitIDs: true, Transform: m.chunk})
	if err != nil {
		return "", err
	}
	for _, c := range append([]contracts.Chunk{{Type: contracts.ChunkSession, SessionID: threadID}}, chunks...) {
		if err := sw.Event(0, c); err != nil {
			return "", err
		}
	}
	return rec.Body.String(), nil
}

// Prompt is the prompt of a RunAgentInput body (its error when it has none).
func Prompt(body string) (string, error) {
	r := httptest.NewRequest("POST", "/", strings.NewReader(body))
	_, t, err := parseInput(r, 1<<20)
	return t.text, err
}
