// Package rpccount is a counting proxy for a Temporal frontend: it forwards every gRPC call
// (HTTP/2 without TLS, as the SDK dials a dev server) to the server and counts the calls by
// method. The benchmarks put it between their processes and the dev server to count what a
// workflow history does not show: activity heartbeats that reached the server, queries, and the
// client calls (starts, signals, updates) beside their history events.
package rpccount

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// Proxy forwards to a Temporal frontend and counts the calls.
type Proxy struct {
	srv   *http.Server
	ln    net.Listener
	mu    sync.Mutex
	calls map[string]int64
}

// Start listens on 127.0.0.1 (a free port) and forwards to target (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, calls: map[string]int64{}}
	tr := &http.Transport{Protocols: new(http.Protocols), MaxIdleConnsPerHost: 64}
	tr.Protocols.SetUnencryptedHTTP2(true)
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: "http", Host: target}) },
		Transport:     tr,
		FlushInterval: -1,
		// A call cancelled by its caller (a long poll when a worker stops) is not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{Protocols: new(http.Protocols), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.add(r.URL.Path)
		rp.ServeHTTP(w, r)
	})}
	p.srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Address is the proxy's host:port, the address to dial instead of the server's.
func (p *Proxy) Address() string { return p.ln.Addr().String() }

func (p *Proxy) add(path string) {
	m := path[strings.LastIndexByte(path, '/')+1:]
	p.mu.Lock()
	p.calls[m]++
	p.mu.Unlock()
}

// Counts returns the calls so far by method name ("RecordActivityTaskHeartbeat", ...).
func (p *Proxy) Counts() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int64, len(p.calls))
	for k, v := range p.calls {
		out[k] = v
	}
	return out
}

// Since returns the calls counted after the snapshot before (from Counts), by method.
func (p *Proxy) Since(before map[string]int64) map[string]int64 {
	out := p.Counts()
	for k, v := range before {
		out[k] -= v
		if out[k] == 0 {
			delete(out, k)
		}
	}
	return out
}

// Close stops the proxy; calls in flight end.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
