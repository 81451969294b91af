package integration_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/tools/mcp"
	"github.com/kortyx-go/kortyx/workflows"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// Issue 10 item 3: every model pass and tool call activity carries a summary (the model, the
// tool) that the Temporal UI and CLI show; it is the UserMetadata of its scheduled event.
func TestModelAndToolActivitiesHaveSummaries(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, testagents.ToolAgentWorkflow, "record something")
	_, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, []string{
		"kortyx.Model: model fake:test",
		"kortyx.Tool: tool record_step",
		"kortyx.Model: model fake:test",
	}, scheduledSummaries(t, run.GetID()))
}

// scheduledSummaries returns "<activity type>: <summary>" of the run's scheduled activities.
func scheduledSummaries(t *testing.T, runID string) []string {
	t.Helper()
	var got []string
	for _, ev := range history(t, tc, runID).Events {
		if ev.GetEventType() != enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			continue
		}
		var summary string
		if p := ev.GetUserMetadata().GetSummary(); p != nil {
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &summary))
		}
		got = append(got, ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()+": "+summary)
	}
	return got
}

// The tool list of MCP servers and an MCP tool call are summarized too (the prefixed name).
func TestMCPActivitiesHaveSummaries(t *testing.T) {
	mcpSrv := sdk.NewServer(&sdk.Implementation{Name: "calc", Version: "1"}, nil)
	mcpSrv.AddTool(&sdk.Tool{Name: "add", Description: "Adds a and b.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "5"}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpSrv }, nil))
	t.Cleanup(ts.Close)

	agent := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "agent", Model: providers.Model("fake:calc"), Input: in.Text(),
			MCP: []hooks.MCPServer{{URL: ts.URL, Prefix: "calc"}}})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
	}
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: "calc", Version: "1", Nodes: map[string]workflows.Node{"agent": {Run: agent}},
		Edges: []workflows.Edge{{From: protocol.StartNode, To: "agent"}}}))
	pool := &mcp.Pool{}
	t.Cleanup(func() { require.NoError(t, pool.Close()) })
	tq := taskQueue(t)
	model := fake.New(fake.Call("calc_add", `{"a":2,"b":3}`), fake.Text("It is 5."))
	w := newWorker(tc, tq, reg, &activities.Activities{Stream: stream.NewMemory(stream.MemoryOptions{}),
		Providers: providers.NewSet(model), MCP: pool})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run := startRun(t, tc, tq, "calc", "2+3?")
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "It is 5.", res.State.Data["answer"])
	require.Equal(t, []string{
		"kortyx.ListTools: list MCP tools",
		"kortyx.Model: model fake:calc",
		"kortyx.Tool: tool calc_add",
		"kortyx.Model: model fake:calc",
	}, scheduledSummaries(t, run.GetID()))
}
