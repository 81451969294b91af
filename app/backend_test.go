package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kortyx-go/kortyx/examples/support"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

func TestBackendAddsToolsOfConfiguredMCPServers(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "kb", Version: "1"}, nil)
	for _, name := range []string{"search_docs", "search_code", "delete_all"} {
		srv.AddTool(&sdk.Tool{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
	}
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()

	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("KORTYX_MCP_SERVERS", `[{"url":"`+ts.URL+`","include":["search_*"],"prefix":"kb"}]`)
	shop, err := support.Tools(support.NewStore())
	require.NoError(t, err)
	opts := backendOptions{Tools: shop, Fakes: true}
	b, err := newBackend(context.Background(), opts)
	require.NoError(t, err)
	defer b.stop()
	require.Equal(t, []string{"kb_search_code", "kb_search_docs", "lookup_order", "refund"}, b.Tools.Names())

	t.Setenv("KORTYX_MCP_SERVERS", `[{"url":"http://127.0.0.1:1/mcp"}]`)
	_, err = newBackend(context.Background(), opts)
	require.ErrorContains(t, err, "KORTYX_MCP_SERVERS")

	t.Setenv("KORTYX_MCP_SERVERS", `{"url":"x"}`)
	_, err = newBackend(context.Background(), opts)
	require.ErrorContains(t, err, "must be a JSON list")
}
