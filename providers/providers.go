package providers

import (
	"context"
	"sort"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
)

// Request is one model pass.
type Request struct {
	// Model is the provider's model id (e.g. "gpt-4.1-mini").
	Model string
	// ModelOptions are the options of the model reference (provider-specific, e.g. baseURL).
	ModelOptions map[string]any
	Messages     []Message
	Tools        []ToolDefinition
	Options      CallOptions
}

// Provider runs model passes.
//
// Generate streams when onDelta is not nil, calling it with each text delta in order (an error
// from onDelta aborts the pass and is returned); the response holds the full text either way.
// Errors are *contracts.Error with a provider code (PROVIDER_HTTP_ERROR, PROVIDER_TRANSPORT_ERROR,
// PROVIDER_INVALID_RESPONSE, PROVIDER_REFUSAL, PROVIDER_CONFIGURATION) and Retryable set: the
// activity's retry policy is the only retry, so a provider never retries by itself. A
// Details["retryAfterMs"] (int) asks for a later retry. Options a provider cannot honour are
// reported in the response's Warnings, never dropped silently.
type Provider interface {
	// ID is the provider id used in model references ("openai", "fake").
	ID() string
	Generate(ctx context.Context, req Request, onDelta func(delta string) error) (Response, error)
}

// Set is the providers of a worker, by id. The zero value is empty; it is read-only after
// construction.
type Set struct {
	byID map[string]Provider
}

// NewSet returns a set of the given providers; a later provider with the same id replaces an
// earlier one.
func NewSet(ps ...Provider) *Set {
	s := &Set{byID: map[string]Provider{}}
	for _, p := range ps {
		s.byID[p.ID()] = p
	}
	return s
}

// Get returns the provider with the given id or a PROVIDER_CONFIGURATION error naming the ids
// that are registered.
func (s *Set) Get(id string) (Provider, error) {
	if s != nil {
		if p, ok := s.byID[id]; ok {
			return p, nil
		}
	}
	return nil, contracts.Errorf(contracts.CodeProviderConfiguration,
		"Provider '%s' is not registered on this worker (registered: %s).", id, strings.Join(s.IDs(), ", "))
}

// IDs returns the registered provider ids, sorted.
func (s *Set) IDs() []string {
	if s == nil {
		return nil
	}
	ids := make([]string, 0, len(s.byID))
	for id := range s.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
