package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// IdempotencyKeyMeta is the _meta key of a tools/call request that carries the call's
// idempotency key ([tools.Call.IdempotencyKey]): the same for every retry of one model tool
// call, so a server can perform a side effect once.
const IdempotencyKeyMeta = "kortyx/idempotencyKey"

// compile compiles the schemas of a listed tool.
func compile(t *sdk.Tool) listedTool {
	lt := listedTool{name: t.Name, title: t.Title, description: t.Description}
	if lt.title == "" && t.Annotations != nil {
		lt.title = t.Annotations.Title
	}
	schema := func(kind string, v any) (*contracts.Schema, error) {
		b, err := json.Marshal(v)
		if err == nil {
			var s *contracts.Schema
			if s, err = contracts.CompileSchema(b); err == nil {
				return s, nil
			}
		}
		return nil, fmt.Errorf("tool %q: %s schema: %w", t.Name, kind, err)
	}
	in := t.InputSchema
	if in == nil {
		in = map[string]any{"type": "object"}
	}
	if lt.in, lt.err = schema("input", in); lt.err != nil {
		return lt
	}
	if t.OutputSchema != nil {
		lt.out, lt.err = schema("output", t.OutputSchema)
	}
	return lt
}

// tool is the worker tool of a listed tool as the server s presents it.
func (e *endpoint) tool(s Server, t listedTool) tools.Tool {
	name := t.name
	if s.Prefix != "" {
		name = s.Prefix + "_" + t.name
	}
	return tools.Tool{Name: name, Title: t.title, Description: t.description, InputSchema: t.in, OutputSchema: t.out,
		Execute: func(ctx context.Context, call tools.Call) (tools.Result, error) {
			return e.call(ctx, t.name, call)
		}}
}

// call runs tools/call. Transport failures are retryable errors; a JSON-RPC error of the
// server is a plain error (the model sees it as an isError result).
func (e *endpoint) call(ctx context.Context, name string, call tools.Call) (tools.Result, error) {
	params := &sdk.CallToolParams{Name: name, Arguments: call.Input}
	if call.IdempotencyKey != "" {
		params.Meta = sdk.Meta{IdempotencyKeyMeta: call.IdempotencyKey}
	}
	var res *sdk.CallToolResult
	// A call is repeated on a new session only when it surely did not run the tool: the server
	// said it does not know the session, or the request never reached it.
	again := func(err error) bool { return errors.Is(err, sdk.ErrSessionMissing) || notSent(err) }
	err := e.do(ctx, again, func(cs *sdk.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, params)
		return err
	})
	switch {
	case err == nil:
		return result(res)
	case ctx.Err() != nil:
		return tools.Result{}, ctx.Err()
	case transient(err):
		return tools.Result{}, tools.Retryable(fmt.Errorf("kortyx: MCP server %s: calling tool %q: %w", e.url, name, err))
	}
	if we := rpcError(err); we != nil {
		return tools.Result{}, fmt.Errorf("MCP tool %q failed: %s", name, we.Message)
	}
	return tools.Result{}, fmt.Errorf("MCP tool %q failed: %w", name, err)
}

// result converts a tools/call result: text items joined by newlines, other items summarized;
// structuredContent becomes the structured result unless the result is an error.
func result(res *sdk.CallToolResult) (tools.Result, error) {
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s]", c.MIMEType))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s]", c.MIMEType))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource: %s]", c.URI))
		case *sdk.EmbeddedResource:
			uri := ""
			if c.Resource != nil {
				uri = c.Resource.URI
			}
			parts = append(parts, fmt.Sprintf("[resource: %s]", uri))
		default:
			parts = append(parts, fmt.Sprintf("[content: %T]", c))
		}
	}
	out := tools.Result{Content: strings.Join(parts, "\n"), IsError: res.IsError}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return tools.Result{}, fmt.Errorf("structured content is not JSON: %w", err)
		}
		if !res.IsError {
			out.Structured = json.RawMessage(b)
		} else if out.Content == "" {
			out.Content = string(b)
		}
	}
	return out, nil
}

// JSON-RPC codes the SDK uses for failures of the connection rather than of the request.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// transient reports whether err is a failure to reach the server (connection refused, HTTP
// 5xx, a lost session) rather than an answer of the server.
func transient(err error) bool {
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) {
		return true
	}
	return rpcError(err) == nil
}

// rpcError returns the JSON-RPC error the server answered with, if any.
func rpcError(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	var walk func(error) bool
	walk = func(err error) bool {
		if we, ok := err.(*jsonrpc.Error); ok && we.Code != codeClientClosing && we.Code != codeServerClosing && we.Code != codeRejected {
			found = we
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				return walk(next)
			}
		case interface{ Unwrap() []error }:
			for _, next := range u.Unwrap() {
				if walk(next) {
					return true
				}
			}
		}
		return false
	}
	walk(err)
	return found
}

// notSent reports a transport error that means the request never reached the server: the
// connection could not be made, or the server had closed the idle connection it was written to
// (Go's HTTP client does not retry a POST itself).
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return strings.Contains(err.Error(), "http: server closed idle connection")
}
