package workflows_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools/mcp"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

// TestRetryableMCPErrorReachesClientsAsSafeFailure: an MCP server that answers every tools/call
// with an HTTP 503 naming an internal address fails the run, after the call's retries, with the
// safe EXECUTION_FAILED; the server's text is in no chunk.
func TestRetryableMCPErrorReachesClientsAsSafeFailure(t *testing.T) {
	url, _, adds := mcpServer(t)
	var calls atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			calls.Add(1)
			http.Error(w, "upstream db 10.0.3.7:5432 refused: password hunter2", http.StatusServiceUnavailable)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, url+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(proxy.Close)

	model := fake.New(fake.Call("calc_add", `{"a":2,"b":3}`), fake.Text("unreachable"))
	h := newHarness(t, def("agent", map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{
			MCP: []hooks.MCPServer{{URL: proxy.URL, Include: []string{"add"}, Prefix: "calc"}},
			ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true},
				Retry: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2}},
		}, nil),
	}, "__start__>chat"))
	pool := &mcp.Pool{}
	t.Cleanup(func() { _ = pool.Close() })
	h.acts.Providers, h.acts.DefaultProvider, h.acts.MCP = providers.NewSet(model), fake.ID, pool
	h.run("agent", "2+3?")

	_, err := h.result()
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(err))
	require.Contains(t, err.Error(), "Service Unavailable", "the server's answer stays in Temporal")
	require.EqualValues(t, 2, calls.Load(), "both attempts reached the server")
	require.Zero(t, adds.Load())
	require.Equal(t, []string{"tool-call-start", "error", "done"}, h.types())
	require.Equal(t, "An unexpected error occurred.", h.chunks()[1].Message)
	require.Equal(t, map[string]any{"activity": protocol.ToolActivityName}, h.chunks()[1].Failure.Context)
	all, err := json.Marshal(h.chunks())
	require.NoError(t, err)
	require.NotContains(t, string(all), "hunter2")
	require.NotContains(t, string(all), "10.0.3.7")
	require.NotContains(t, string(all), proxy.URL)
}
