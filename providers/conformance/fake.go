package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// Fake is the target of the in-process fake provider ([fake.Model]): its "server" is the model
// itself, reached through a URL of the form "inprocess:<n>" that only this package resolves.
func Fake() Target {
	return Target{
		Name:  "fake",
		Model: "fake-model",
		NewServer: func(respond fake.Responder) Server {
			s := &inProcess{model: fake.NewResponder(respond), url: fmt.Sprintf("inprocess:%d", inProcessN.Add(1))}
			inProcessServers.Store(s.url, s)
			return s
		},
		NewProvider: func(baseURL string) providers.Provider {
			s, ok := inProcessServers.Load(baseURL)
			if !ok {
				panic("conformance: no in-process fake at " + baseURL)
			}
			return &recording{s: s.(*inProcess)}
		},
		ToolErrorFlag: true, // the request is seen as sent
	}
}

var (
	inProcessN       atomic.Int64
	inProcessServers sync.Map // url → *inProcess
)

type inProcess struct {
	model *fake.Model
	url   string

	mu      sync.Mutex
	streams []bool
}

func (s *inProcess) URL() string { return s.url }
func (s *inProcess) Close()      { inProcessServers.Delete(s.url) }

func (s *inProcess) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	reqs := s.model.Requests()
	out := make([]Request, len(reqs))
	for i, r := range reqs {
		raw, _ := json.Marshal(r)
		out[i] = Request{Request: r, Stream: i < len(s.streams) && s.streams[i], Raw: raw}
	}
	return out
}

// recording is the fake provider, noting whether each pass streamed.
type recording struct{ s *inProcess }

func (r *recording) ID() string { return r.s.model.ID() }

func (r *recording) Generate(ctx context.Context, req providers.Request, onDelta func(string) error) (providers.Response, error) {
	r.s.mu.Lock()
	r.s.streams = append(r.s.streams, onDelta != nil)
	r.s.mu.Unlock()
	return r.s.model.Generate(ctx, req, onDelta)
}
