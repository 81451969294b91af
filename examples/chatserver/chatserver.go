// Package chatserver is a complete example of the chat and checkpoint routes behind an
// application's own authentication, with a server-owned transcript kept in step through the
// lifecycle callbacks.
//
// Every request carries "Authorization: Bearer <token>"; a token names a user. A session
// belongs to the user whose first turn it accepted (a fork to its source's owner), and every
// route checks that ownership before any work — client-supplied ids are not proof of
// ownership. Ownership is kept by the session workflow itself (chat.Options.Owner; read back
// with sessions.Service.Owner), so it survives a restart of this server, and a refused request
// claims nothing. The transcript (one user message and one assistant message per turn) is stored by the callbacks:
// OnTurnAccepted saves the user's message before the turn runs (if that fails, the turn is
// refused with 503 and nothing runs), OnResponseFinalized saves the finalized assistant
// message, OnRolledBack cuts the transcript back to the restored checkpoint, and OnForked copies
// it into the new session with the fork's tokens. The transcript store here is in memory; a
// real application writes to its database in the same places.
package chatserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"go.temporal.io/sdk/client"
)

// Options configure [New].
type Options struct {
	// Client, Broker and TaskQueue are those of the workers (see chat.Options).
	Client    client.Client
	Broker    stream.Broker
	TaskQueue string
	// DefaultWorkflow runs a session's first turn when the request names none.
	DefaultWorkflow string
	// Tokens maps bearer tokens to user ids.
	Tokens map[string]string
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Entry is one transcript message.
type Entry struct {
	// ID is "<clientTurnId>:user" or "<clientTurnId>:assistant".
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content string `json:"content"`
	// TurnIndex is the turn's checkpoint turn index (0 until the turn has a checkpoint).
	TurnIndex int `json:"turnIndex"`
	// User wrote the turn (only the session owner's entries are shown).
	User string `json:"user"`
	// Status and Message are the finalized assistant message (assistant entries).
	Status  sessions.Status            `json:"status,omitempty"`
	Message *sessions.FinalizedMessage `json:"message,omitempty"`
}

// Store holds transcripts, in memory.
type Store struct {
	mu          sync.Mutex
	transcripts map[string][]Entry // session → entries
	turns       map[string]int     // checkpoint id → turn index
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{transcripts: map[string][]Entry{}, turns: map[string]int{}}
}

// Transcript returns a copy of the entries of a session written by user (its owner: a
// request that raced the owner's first turn and was refused by the session may have left a
// user entry of its own).
func (s *Store) Transcript(session, user string) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Entry{}
	for _, e := range s.transcripts[session] {
		if e.User == user {
			out = append(out, e)
		}
	}
	return out
}

// put adds an entry, or replaces the entry with the same id (a retried turn is stored once).
func (s *Store) put(session string, e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.transcripts[session]
	for i := range list {
		if list[i].ID == e.ID {
			list[i] = e
			return
		}
	}
	s.transcripts[session] = append(list, e)
}

// finalized stores an assistant message and dates the turn's user message with its turn index.
func (s *Store) finalized(session, user string, ev chat.ResponseFinalized) {
	turn := 0
	if ev.Message.CheckpointTurnIndex != nil {
		turn = *ev.Message.CheckpointTurnIndex
	}
	msg := ev.Message
	s.put(session, Entry{ID: msg.ID, Role: "assistant", Content: msg.Content, TurnIndex: turn, User: user, Status: ev.Status, Message: &msg})
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.CheckpointID != "" {
		s.turns[ev.CheckpointID] = turn
	}
	list := s.transcripts[session]
	for i := range list {
		if list[i].ID == ev.ClientTurnID+":user" {
			list[i].TurnIndex = turn
		}
	}
}

// cut keeps the entries of the turns up to the checkpoint's (a checkpoint the store does not
// know, such as "session start", keeps nothing).
func (s *Store) cut(session, checkpointID string) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	turn := s.turns[checkpointID]
	var kept []Entry
	for _, e := range s.transcripts[session] {
		if e.TurnIndex > 0 && e.TurnIndex <= turn {
			kept = append(kept, e)
		}
	}
	return kept
}

// fork copies the entries of the source session up to the checkpoint into the new session,
// with the tokens and request ids its open questions have there.
func (s *Store) fork(ev chat.Forked) {
	kept := s.cut(ev.SourceSessionID, ev.SourceCheckpointID)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range kept {
		if kept[i].Message == nil {
			continue
		}
		msg := *kept[i].Message
		msg.ContentPieces = append([]sessions.ContentPiece(nil), msg.ContentPieces...)
		for j, p := range msg.ContentPieces {
			for _, r := range ev.Reissued {
				if p.ResumeToken == r.FromToken {
					msg.ContentPieces[j].ResumeToken, msg.ContentPieces[j].RequestID = r.Token, r.RequestID
				}
			}
		}
		kept[i].Message = &msg
	}
	s.transcripts[ev.NewSessionID] = kept
	s.turns[ev.NewCheckpointID] = s.turns[ev.SourceCheckpointID]
}

type userKey struct{}

// UserOf returns the authenticated user of a request ("" when none).
func UserOf(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// Server is the example application: the chat, stop and checkpoint routes, and the transcript
// route, behind bearer-token authentication.
type Server struct {
	Store  *Store
	mux    *http.ServeMux
	routes http.Handler // mux, with JSON errors for unknown paths and methods
	o      Options
}

// New builds the server.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{Store: NewStore(), mux: http.NewServeMux(), o: o}
	store := s.Store
	// owned checks that the caller owns session; unclaimed, when true, also lets a caller use a
	// session that has no owner yet (a prompt: the session itself refuses it if another
	// caller's first turn gets there first).
	svc, err := sessions.New(sessions.Options{Client: o.Client, Broker: o.Broker, TaskQueue: o.TaskQueue, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	owned := func(r *http.Request, session string, unclaimed bool) error {
		user := UserOf(r)
		if user == "" {
			return &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in first."}
		}
		if session == "" { // a malformed request, whoever sends it
			return &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "sessionId is required.",
				Issues: []contracts.Issue{{Path: []any{"sessionId"}, Code: "required", Message: "sessionId is required"}}}
		}
		owner, err := svc.Owner(r.Context(), session)
		if err != nil {
			return err
		}
		if owner != user && (owner != "" || !unclaimed) {
			return &contracts.Error{Code: contracts.CodeForbidden, Message: "This session is not yours."}
		}
		return nil
	}
	chatRoute, err := chat.NewHandler(svc, chat.Options{
		DefaultWorkflow: o.DefaultWorkflow, Logger: o.Logger,
		Owner: UserOf,
		Authorize: func(r *http.Request, a sessions.Access) error {
			return owned(r, a.SessionID, a.Action == sessions.ActionStart)
		},
		OnTurnAccepted: func(ctx context.Context, ev chat.TurnAccepted) error {
			store.put(ev.SessionID, Entry{ID: ev.ClientTurnID + ":user", Role: "user", Content: ev.UserMessage.Content, User: UserOf(ev.Request)})
			return nil
		},
		OnResponseFinalized: func(ctx context.Context, ev chat.ResponseFinalized) error {
			store.finalized(ev.SessionID, UserOf(ev.Request), ev)
			return nil
		},
		OnLifecycleError: func(ev chat.LifecycleError) {
			o.Logger.Error("chatserver: saving the transcript failed", "phase", ev.Phase, "clientTurnId", ev.ClientTurnID, "error", ev.Err)
		},
	})
	if err != nil {
		return nil, err
	}
	checkpoints, err := chat.NewCheckpointHandler(svc, chat.CheckpointOptions{
		Logger: o.Logger,
		// Only the owner may list, restore or fork a session's checkpoints; a fork's new session
		// id, when the client picks it, must not belong to someone else.
		Authorize: func(r *http.Request, a sessions.Access) error {
			if err := owned(r, a.SessionID, false); err != nil {
				return err
			}
			if a.NewSessionID != "" {
				return owned(r, a.NewSessionID, true)
			}
			return nil
		},
		OnRolledBack: func(ctx context.Context, ev chat.RolledBack) error {
			kept := store.cut(ev.SessionID, ev.HeadCheckpointID)
			store.mu.Lock()
			defer store.mu.Unlock()
			store.transcripts[ev.SessionID] = kept
			return nil
		},
		OnForked: func(ctx context.Context, ev chat.Forked) error {
			store.fork(ev)
			return nil
		},
		OnLifecycleError: func(ev chat.LifecycleError) {
			o.Logger.Error("chatserver: updating the transcript failed", "phase", ev.Phase, "error", ev.Err)
		},
	})
	if err != nil {
		return nil, err
	}
	s.mux.Handle("POST /api/chat", chatRoute)
	s.mux.Handle("POST /api/chat/stop", chatRoute.StopHandler())
	s.mux.Handle("POST /api/checkpoints", checkpoints)
	s.mux.HandleFunc("GET /api/transcript", func(w http.ResponseWriter, r *http.Request) {
		session := r.URL.Query().Get("sessionId")
		if err := owned(r, session, false); err != nil {
			chat.WriteError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(store.Transcript(session, UserOf(r)))
	})
	s.routes = chat.JSONErrors(s.mux, o.Logger)
	return s, nil
}

// ServeHTTP authenticates the request, then routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	user := s.o.Tokens[strings.TrimSpace(token)]
	if !ok || user == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kortyx"`)
		chat.WriteError(w, &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in first: send Authorization: Bearer <token>."})
		return
	}
	s.routes.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
}

// ParseTokens reads "token=user,token=user" (KORTYX_CHAT_TOKENS).
func ParseTokens(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		token, user, ok := strings.Cut(pair, "=")
		token, user = strings.TrimSpace(token), strings.TrimSpace(user)
		if !ok || token == "" || user == "" {
			return nil, errors.New(`chatserver: tokens look like "token=user,token=user"`)
		}
		out[token] = user
	}
	if len(out) == 0 {
		return nil, errors.New("chatserver: no tokens: set KORTYX_CHAT_TOKENS to token=user pairs")
	}
	return out, nil
}
