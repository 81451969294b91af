package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools/mcp"
	"github.com/kortyx-go/kortyx/workflows"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// mcpServer serves an "add" and a "secret" tool over streamable HTTP and counts tools/list and
// add calls.
func mcpServer(t *testing.T) (url string, lists, adds *atomic.Int32) {
	lists, adds = &atomic.Int32{}, &atomic.Int32{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "calc", Version: "1"}, nil)
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	srv.AddTool(&sdk.Tool{Name: "add", Description: "Adds a and b.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			adds.Add(1)
			var in struct{ A, B float64 }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "secret", Description: "Not for models.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL, lists, adds
}

func TestReasonWithMCPTools(t *testing.T) {
	url, lists, adds := mcpServer(t)
	model := fake.New(fake.Call("calc_add", `{"a":2,"b":3}`), fake.Text("It is 5."))
	var res hooks.ReasonResult
	h := newHarness(t, def("agent", map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{
			MCP:           []hooks.MCPServer{{URL: url, Include: []string{"add"}, Prefix: "calc"}},
			ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}},
		}, &res),
	}, "__start__>chat"))
	pool := &mcp.Pool{}
	t.Cleanup(func() { _ = pool.Close() })
	h.acts.Providers, h.acts.DefaultProvider, h.acts.MCP = providers.NewSet(model), fake.ID, pool
	h.run("agent", "2+3?")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "It is 5.", res.Text)
	require.Equal(t, int32(1), adds.Load())
	require.Equal(t, int32(1), lists.Load(), "listed once: recorded for the call, cached for the passes")
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "text-start", "text-delta", "text-delta", "text-delta", "text-end", "done"}, h.types())
	require.Equal(t, "5", h.chunks()[1].Content)
	first := model.Requests()[0]
	require.Len(t, first.Tools, 1, "excluded tools are never offered")
	require.Equal(t, "calc_add", first.Tools[0].Name)
	require.Equal(t, "Adds a and b.", first.Tools[0].Description)
}
