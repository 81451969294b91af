package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// With MCPStateless (KORTYX_MCP_STATELESS; on in dev mode) the worker program's API serves MCP
// 2026-07-28 beside the older revisions at /mcp:
// server/discover lists it first and tools/list answers without a session (the package's own
// tests, mcpserver/stateless_test.go, run its questions and request states).
func TestServeHTTPServesMCP2026(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"}) // discover and list reach no Temporal
	require.NoError(t, err)
	t.Cleanup(c.Close)
	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, addr, err := ServeHTTP(ctx, "127.0.0.1:0", API{Client: c, Broker: stream.NewMemory(stream.MemoryOptions{}), TaskQueue: "mcp",
		Registry: reg, NoWebPage: true, MCPStateless: true, MCPStateKey: bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)

	post := func(method string) (int, http.Header, map[string]any) {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}})
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			for _, line := range strings.Split(string(raw), "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					raw = []byte(data)
				}
			}
		}
		var msg map[string]any
		require.NoError(t, json.Unmarshal(raw, &msg), "%s", raw)
		return resp.StatusCode, resp.Header, msg
	}
	status, hdr, msg := post("server/discover")
	require.Equal(t, http.StatusOK, status, "%v", msg)
	require.Empty(t, hdr.Get("Mcp-Session-Id"), "2026-07-28 has no sessions")
	result := msg["result"].(map[string]any)
	require.Equal(t, []any{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, result["supportedVersions"])

	status, _, msg = post("tools/list")
	require.Equal(t, http.StatusOK, status, "%v", msg)
	tools := msg["result"].(map[string]any)["tools"].([]any)
	require.Len(t, tools, 1)
	require.Equal(t, "hello", tools[0].(map[string]any)["name"])
}
