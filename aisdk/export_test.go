package aisdk

import (
	"net/http/httptest"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
)

// Body is the response body the handler writes for chunks: the same writer and mapping, for
// the external tests that feed it to the AI SDK.
func Body(known map[string]bool, chunks ...contracts.Chunk) (string, error) {
	return body(newMapper(known), chunks)
}

// CancelBody is the body of the response to a request that cancelled kortyx_ask call
// toolCallID with errorText.
func CancelBody(toolCallID, errorText string, chunks ...contracts.Chunk) (string, error) {
	m := newMapper(nil)
	m.cancel = &cancelledCall{toolCallID: toolCallID, errorText: errorText}
	return body(m, chunks)
}

func body(m *mapper, chunks []contracts.Chunk) (string, error) {
	rec := httptest.NewRecorder()
	sw, err := httpwire.NewSSEWriter(rec, httpwire.SSEOptions{OmitIDs: true, Transform: m.chunk})
	if err != nil {
		return "", err
	}
	for _, c := range append([]contracts.Chunk{{Type: contracts.ChunkSession, SessionID: "s"}}, chunks...) {
		if err := sw.Event(0, c); err != nil {
			return "", err
		}
	}
	return rec.Body.String(), sw.Done()
}
