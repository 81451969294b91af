package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is an MCP server reached over streamable HTTP.
type Server struct {
	// URL is the server's MCP endpoint, e.g. http://localhost:8931/mcp.
	URL string `json:"url"`
	// Headers are sent with every request, e.g. Authorization.
	Headers map[string]string `json:"headers,omitempty"`
	// Include keeps only these tools (exact names or path.Match globs, matched against the
	// server's own names); empty keeps all. Names that the server does not offer are ignored.
	Include []string `json:"include,omitempty"`
	// Exclude drops these tools (exact names or globs), after Include.
	Exclude []string `json:"exclude,omitempty"`
	// Prefix, when set, names the tools "<prefix>_<name>" for the model.
	Prefix string `json:"prefix,omitempty"`
}

// defaultTTL is how long a server's tool list is cached when [Pool.TTL] is 0.
const defaultTTL = time.Minute

// Pool keeps one client session per server (URL and headers), reconnecting when a session
// breaks, and caches each server's tool list for a TTL. The zero value is ready to use
// (sessions are opened on first use); set the fields before the first use, and do not copy a
// Pool after it. It is safe for concurrent use; share one pool per worker and close it on
// shutdown.
type Pool struct {
	// TTL is how long a server's tool list is cached (0: one minute; negative: the tools are
	// listed on every use).
	TTL time.Duration
	// HTTPClient reaches the servers (nil: http.DefaultClient). Server headers are added by
	// wrapping its transport; the client itself is not modified.
	HTTPClient *http.Client
	// ClientName and ClientVersion are the implementation the pool sends in initialize
	// (default "kortyx", "dev").
	ClientName, ClientVersion string

	now func() time.Time // the clock of the tool-list cache (nil: time.Now); replaced in tests

	mu        sync.Mutex
	client    *sdk.Client // set on first use, under mu
	closed    bool
	endpoints map[string]*endpoint
}

// ttl is the cache lifetime of a tool list; 0 caches nothing.
func (p *Pool) ttl() time.Duration {
	switch {
	case p.TTL == 0:
		return defaultTTL
	case p.TTL < 0:
		return 0
	}
	return p.TTL
}

func (p *Pool) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// Close closes every session; the pool cannot be used afterwards.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	eps := p.endpoints
	p.endpoints = map[string]*endpoint{}
	p.mu.Unlock()
	var errs []error
	for _, e := range eps {
		e.mu.Lock()
		cs := e.session
		e.session = nil
		e.mu.Unlock()
		if cs != nil {
			if err := cs.Close(); err != nil {
				errs = append(errs, fmt.Errorf("kortyx: MCP server %s: closing: %w", e.url, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Tools lists the server's tools that pass its filters, sorted by name, as worker tools whose
// Execute calls the MCP tool. A tool whose input or output schema does not compile is an
// INVALID_DEFINITION error naming it (exclude it to use the others); a server that cannot be
// reached is a retryable error.
func (p *Pool) Tools(ctx context.Context, s Server) ([]tools.Tool, error) {
	e, err := p.endpoint(s)
	if err != nil {
		return nil, err
	}
	listed, err := e.list(ctx)
	if err != nil {
		return nil, err
	}
	var out []tools.Tool
	var bad []error
	for _, t := range listed {
		ok, err := s.keep(t.name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if t.err != nil {
			bad = append(bad, t.err)
			continue
		}
		out = append(out, e.tool(s, t))
	}
	if len(bad) > 0 {
		return nil, &contracts.Error{Code: contracts.CodeInvalidDefinition,
			Message: fmt.Sprintf("kortyx: MCP server %s: %v", s.URL, errors.Join(bad...))}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Definitions returns what the model is told about the servers' tools (with their prefixed
// names), in server order then name order, and the index of the server of each tool name. A
// name offered by two servers, or a name a worker tool cannot have, is an INVALID_DEFINITION
// error.
func (p *Pool) Definitions(ctx context.Context, servers []Server) ([]providers.ToolDefinition, map[string]int, error) {
	var all []tools.Tool
	owner := map[string]int{}
	for i, s := range servers {
		ts, err := p.Tools(ctx, s)
		if err != nil {
			return nil, nil, unanswered(ctx, s, err)
		}
		for _, t := range ts {
			if j, dup := owner[t.Name]; dup {
				return nil, nil, contracts.Errorf(contracts.CodeInvalidDefinition,
					"kortyx: tool %q is offered by MCP servers %s and %s; give one of them a prefix or exclude the tool",
					t.Name, servers[j].URL, s.URL)
			}
			owner[t.Name] = i
			all = append(all, t)
		}
	}
	set, err := tools.NewSet(all...)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(all))
	for i, t := range all {
		names[i] = t.Name
	}
	defs, err := set.Definitions(names)
	if err != nil {
		return nil, nil, err
	}
	return defs, owner, nil
}

// unanswered is the error of a server whose tools could not be listed: err when it is typed
// (a definition the worker refuses) or the context ended, else a retryable EXECUTION_FAILED
// whose message says which server did not answer (what an operator and a client are shown),
// with err, the transport's text, as its cause (operators only).
func unanswered(ctx context.Context, s Server, err error) error {
	var ke *contracts.Error
	if ctx.Err() != nil || errors.As(err, &ke) {
		return err
	}
	return &contracts.Error{Code: contracts.CodeExecutionFailed, Retryable: true, Err: err,
		Message: fmt.Sprintf("MCP server %s did not answer: its tools could not be listed.", s.URL)}
}

// Call runs a tool of the server by its model-facing (prefixed) name, like [tools.Set.Run]:
// invalid arguments and tool failures come back as isError results; the error is non-nil
// only for an unknown tool, a server that cannot be reached (retryable) or a cancellation.
func (p *Pool) Call(ctx context.Context, s Server, in protocol.ToolCallInput) (providers.ToolResult, error) {
	ts, err := p.Tools(ctx, s)
	if err != nil {
		return providers.ToolResult{}, err
	}
	for _, t := range ts {
		if t.Name == in.Tool {
			set, err := tools.NewSet(t)
			if err != nil {
				return providers.ToolResult{}, err
			}
			return set.Run(ctx, in)
		}
	}
	return providers.ToolResult{}, contracts.Errorf(contracts.CodeUnknownTool,
		"tool %q is not offered by MCP server %s", in.Tool, s.URL)
}

// keep applies Include then Exclude to a server-side tool name.
func (s Server) keep(name string) (bool, error) {
	if len(s.Include) > 0 {
		in, err := matchAny(s.Include, name)
		if err != nil || !in {
			return false, err
		}
	}
	out, err := matchAny(s.Exclude, name)
	return !out, err
}

func matchAny(patterns []string, name string) (bool, error) {
	for _, pat := range patterns {
		if pat == name {
			return true, nil
		}
		ok, err := path.Match(pat, name)
		if err != nil {
			return false, fmt.Errorf("kortyx: MCP tool filter %q: %w", pat, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// endpoint returns the shared state of a server URL and headers.
func (p *Pool) endpoint(s Server) (*endpoint, error) {
	if s.URL == "" {
		return nil, errors.New("kortyx: MCP server URL is empty")
	}
	key := endpointKey(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("kortyx: MCP server %s: the pool is closed", s.URL)
	}
	if p.client == nil {
		name, version := p.ClientName, p.ClientVersion
		if name == "" {
			name = "kortyx"
		}
		if version == "" {
			version = "dev"
		}
		p.client = sdk.NewClient(&sdk.Implementation{Name: name, Version: version}, nil)
		p.endpoints = map[string]*endpoint{}
	}
	e := p.endpoints[key]
	if e == nil {
		hc := http.Client{}
		if p.HTTPClient != nil {
			hc = *p.HTTPClient
		}
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		if len(s.Headers) > 0 {
			hc.Transport = headerTransport{base: base, headers: s.Headers}
		}
		e = &endpoint{pool: p, url: s.URL, transport: &sdk.StreamableClientTransport{
			Endpoint:   s.URL,
			HTTPClient: &hc,
			// Only request/response is used: tool lists are refreshed by TTL, so no standalone
			// SSE stream is kept open per server.
			DisableStandaloneSSE: true,
		}}
		p.endpoints[key] = e
	}
	return e, nil
}

func endpointKey(s Server) string {
	keys := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(s.URL)
	for _, k := range keys {
		fmt.Fprintf(&b, "\x00%s\x00%s", http.CanonicalHeaderKey(k), s.Headers[k])
	}
	return b.String()
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// endpoint is one server (URL and headers): its session and its cached tool list.
type endpoint struct {
	pool      *Pool
	url       string
	transport *sdk.StreamableClientTransport

	listMu sync.Mutex // one listing at a time

	mu      sync.Mutex
	session *sdk.ClientSession
	listed  []listedTool
	at      time.Time
}

// listedTool is a server tool with its compiled schemas, or the error compiling them.
type listedTool struct {
	name, title, description string
	in, out                  *contracts.Schema
	err                      error
}

// sessionFor returns the current session, connecting if there is none; fresh reports a new one.
func (e *endpoint) sessionFor(ctx context.Context) (cs *sdk.ClientSession, fresh bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session != nil {
		return e.session, false, nil
	}
	cs, err = e.pool.client.Connect(ctx, e.transport, nil)
	if err != nil {
		return nil, false, err
	}
	e.session = cs
	return cs, true, nil
}

// drop forgets a broken session so that the next use reconnects.
func (e *endpoint) drop(cs *sdk.ClientSession) {
	e.mu.Lock()
	if e.session != cs {
		cs = nil
	} else {
		e.session = nil
	}
	e.mu.Unlock()
	if cs != nil {
		go func() { _ = cs.Close() }() // best effort, bounded by the SDK; the caller does not wait for it
	}
}

// do runs fn on a session. A transport failure drops the session; when the session was an
// old one and again(err) allows it, fn runs once more on a new session.
func (e *endpoint) do(ctx context.Context, again func(error) bool, fn func(*sdk.ClientSession) error) error {
	for attempt := 0; ; attempt++ {
		cs, fresh, err := e.sessionFor(ctx)
		if err != nil {
			return err
		}
		err = fn(cs)
		if err == nil || ctx.Err() != nil || !transient(err) {
			return err
		}
		e.drop(cs)
		if fresh || attempt > 0 || !again(err) {
			return err
		}
	}
}

// list returns the server's tools, from the cache when it is younger than the TTL.
func (e *endpoint) list(ctx context.Context) ([]listedTool, error) {
	e.listMu.Lock()
	defer e.listMu.Unlock()
	e.mu.Lock()
	cached, at := e.listed, e.at
	e.mu.Unlock()
	if cached != nil && e.pool.ttl() > 0 && e.pool.clock().Sub(at) < e.pool.ttl() {
		return cached, nil
	}
	var got []*sdk.Tool
	err := e.do(ctx, func(error) bool { return true }, func(cs *sdk.ClientSession) error {
		got = got[:0]
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			got = append(got, t)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = fmt.Errorf("kortyx: MCP server %s: listing tools: %w", e.url, err)
		if transient(err) {
			return nil, tools.Retryable(err)
		}
		return nil, err
	}
	listed := make([]listedTool, len(got))
	for i, t := range got {
		listed[i] = compile(t)
	}
	e.mu.Lock()
	e.listed, e.at = listed, e.pool.clock()
	e.mu.Unlock()
	return listed, nil
}
