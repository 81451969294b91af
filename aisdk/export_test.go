package aisdk

import (
	"net/http/httptest"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/ssewriter"
)

// Body is the response body the handler writes for chunks: the same writer and mapping, for
// the external tests that feed it to the AI SDK.
func Body(known map[string]bool, chunks ...contracts.Chunk) (string, error) {
	rec := httptest.NewRecorder()
	m := newMapper(known)
	sw, err := ssewriter.New(rec, ssewriter.Options{OmitIDs: true, Transform: m.chunk})
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
