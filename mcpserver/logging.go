//lint:file-ignore SA1019 MCP logging is deprecated from protocol 2026-07-28 (SEP-2577); up to 2025-11-25 it is part of the protocol and the server advertises it, and a 2026-07-28 request still sets its level in _meta.

package mcpserver

import (
	"context"
	"slices"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logger is the "logger" of the server's notifications/message.
const logger = "kortyx"

// logLevels are MCP's log levels, least severe first (RFC 5424's, as the protocol has them).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// checkLevels is the receiving middleware that refuses a logging/setLevel of an unknown level
// ([checkLevel]).
func checkLevels(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "logging/setLevel" {
			if err := checkLevel(req); err != nil {
				return nil, err
			}
		}
		return next(ctx, method, req)
	}
}

// checkLevel refuses a logging/setLevel whose level is not one of [logLevels] (the SDK would
// keep any string): a JSON-RPC invalid-params error whose data is the failure (INVALID_REQUEST).
func checkLevel(req mcp.Request) error {
	p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
	if !ok || p == nil || slices.Contains(logLevels, string(p.Level)) {
		return nil
	}
	return protocolError(jsonrpc.CodeInvalidParams, contracts.Errorf(contracts.CodeInvalidRequest,
		"The log level %q is not one of %s.", p.Level, strings.Join(logLevels, ", ")))
}

// log sends a notifications/message of the call at level, when the client's level
// (logging/setLevel) lets it through: the SDK sends none before the client sets a level. Its
// data is an object: "message", the call's "kortyx/sessionId" and "kortyx/runId" when known,
// and extra.
func (c *call) log(ctx context.Context, level, message string, extra map[string]any) {
	data := map[string]any{"message": message}
	if c.session != "" {
		data[metaSession] = c.session
	}
	if c.run != "" {
		data[metaRun] = c.run
	}
	for k, v := range extra {
		data[k] = v
	}
	logTo(ctx, c.req.Session, level, data)
}

// logTo sends a notifications/message on session ss at level (the SDK filters by the
// session's level).
func logTo(ctx context.Context, ss *mcp.ServerSession, level string, data map[string]any) {
	if ss == nil {
		return
	}
	// An error here is a client gone or a closed stream: the call's result says the rest.
	_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: logger, Data: data})
}

// logResult logs a call's tool error at level error: its text, and its _meta (the session,
// the run, the failure descriptor).
func logResult(ctx context.Context, ss *mcp.ServerSession, res *mcp.CallToolResult) {
	if res == nil || !res.IsError {
		return
	}
	data := map[string]any{}
	for k, v := range res.Meta {
		if k != metaStatus {
			data[k] = v
		}
	}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			data["message"] = tc.Text
		}
	}
	logTo(ctx, ss, "error", data)
}
