// Package allwires mounts every wire — Kortyx's chat route, the AI SDK's chat transport, the
// MCP server and the A2A endpoints — behind one authorization function, the way an application
// serves them in production (docs/protocols.md). The bearer token names the caller; a session
// belongs to the caller of its first turn (sessions.Service.Owner), on whichever wire that was.
package allwires

import (
	"errors"
	"net/http"
	"strings"

	"github.com/kortyx-go/kortyx/a2aserver"
	"github.com/kortyx-go/kortyx/aisdk"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/mcpserver"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
)

// Options configure [Mount].
type Options struct {
	Client    client.Client
	Broker    stream.Broker
	Registry  *workflows.Registry
	TaskQueue string
	// Users maps bearer tokens to user ids.
	Users map[string]string
}

// Mount serves the four wires on mux: /api/chat, /api/ui/chat, /mcp and /a2a/.
func Mount(mux *http.ServeMux, o Options) error {
	svc, err := sessions.New(sessions.Options{Client: o.Client, Broker: o.Broker, TaskQueue: o.TaskQueue, Agents: o.Registry})
	if err != nil {
		return err
	}
	user := func(r *http.Request) string {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		return o.Users[token]
	}
	// authorize is the one hook of every wire.
	authorize := func(r *http.Request, a sessions.Access) error {
		u := user(r)
		if u == "" {
			return &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in first."}
		}
		if a.SessionID == "" {
			return nil // a listing, or a new session
		}
		owner, err := svc.Owner(r.Context(), a.SessionID)
		if err != nil {
			var coded *contracts.Error
			if errors.As(err, &coded) {
				return err // a coded failure, such as INVALID_SESSION
			}
			return &contracts.Error{Code: contracts.CodeTemporalUnavailable, Retryable: true, Err: err,
				Message: "Temporal did not answer, so the session's owner is unknown; try again shortly."}
		}
		if owner != "" && owner != u {
			return &contracts.Error{Code: contracts.CodeForbidden, Message: "This session is not yours."}
		}
		return nil
	}
	chatRoute, err := chat.NewHandler(svc, chat.Options{Owner: user,
		Authorize: authorize})
	if err != nil {
		return err
	}
	ui, err := aisdk.New(svc, aisdk.Options{Owner: user, Authorize: authorize})
	if err != nil {
		return err
	}
	mcpRoute, err := mcpserver.New(svc, mcpserver.Options{Owner: user,
		Authorize: authorize})
	if err != nil {
		return err
	}
	a2a, err := a2aserver.New(svc, a2aserver.Options{Owner: user,
		Authorize: authorize})
	if err != nil {
		return err
	}
	mux.Handle("POST /api/chat", chatRoute)
	mux.Handle("POST /api/ui/chat", ui)
	mux.Handle("GET /api/ui/chat/{id}/stream", ui)
	mux.Handle("/mcp", mcpRoute)
	mux.Handle("/a2a/", a2a)
	return nil
}
