package web

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/httpapi"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

//go:embed static
var static embed.FS

// Patterns are the routes [Handler] serves, to mount it on a mux that has other routes:
//
//	for _, p := range web.Patterns { mux.Handle(p, h) }
var Patterns = []string{"GET /{$}", "GET /static/", "GET /api/config", "GET /api/sessions", "GET /api/sessions/{id}", "GET /api/runs/{id}/timeline"}

// Options configure [Handler].
type Options struct {
	// Client reaches Temporal (sessions list, session views, run histories and state queries).
	Client client.Client
	// Namespace is the Temporal namespace of the runs (default "default"), for the Temporal UI
	// links and visibility queries.
	Namespace string
	// TemporalUIURL is the base URL of the Temporal UI (e.g. http://127.0.0.1:8233); each run
	// links to <TemporalUIURL>/namespaces/<ns>/workflows/<run id>. "": no links.
	TemporalUIURL string
	// Logger logs failed requests (nil: slog.Default()).
	Logger *slog.Logger
	// DataConverter decodes the payloads of run histories for the timeline: the one Client was
	// dialed with when it has a payload codec (nil: Temporal's default).
	DataConverter converter.DataConverter
}

// Handler serves the page at GET / (and its files under /static/) and the JSON routes it needs:
//
//	GET /api/config                  {temporalUiUrl, namespace}
//	GET /api/sessions                the sessions, newest first: [{sessionId, startedAt, status}]
//	GET /api/sessions/{id}           the session's view (contracts.SessionView)
//	GET /api/runs/{id}/timeline      the run's [Timeline]
//
// Errors are JSON {error, failure} like the chat route's. Mount it on the API's mux next to the
// chat, Stop and checkpoint routes ([Patterns]); it has no authentication (a development tool).
func Handler(o Options) http.Handler {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	files, _ := fs.Sub(static, "static") // the embedded directory exists
	mux := http.NewServeMux()
	page, _ := fs.ReadFile(files, "index.html")
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(page)
	})
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(files)))
	mux.HandleFunc("GET /api/config", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"temporalUiUrl": strings.TrimRight(o.TemporalUIURL, "/"), "namespace": o.Namespace})
	})
	mux.HandleFunc("GET /api/sessions", o.serve(o.sessions))
	mux.HandleFunc("GET /api/sessions/{id}", o.serve(func(r *http.Request) (any, error) {
		id := r.PathValue("id")
		if err := contracts.CheckID("sessionId", id); err != nil {
			return nil, err
		}
		return kortyx.Session(r.Context(), o.Client, id)
	}))
	mux.HandleFunc("GET /api/runs/{id}/timeline", o.serve(func(r *http.Request) (any, error) {
		id := r.PathValue("id")
		if err := contracts.CheckID("runId", id); err != nil {
			return nil, err
		}
		return o.Timeline(r.Context(), id)
	}))
	return mux
}

func (o Options) serve(f func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		v, err := f(r.WithContext(ctx))
		if err != nil {
			writeError(w, o.Logger, r, err)
			return
		}
		writeJSON(w, v)
	}
}

// SessionItem is one session of the sessions list.
type SessionItem struct {
	SessionID string    `json:"sessionId"`
	StartedAt time.Time `json:"startedAt"`
	Status    string    `json:"status"`
}

const sessionPrefix = "kortyx-session:"

func (o Options) sessions(r *http.Request) (any, error) {
	resp, err := o.Client.ListWorkflow(r.Context(), &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: o.Namespace, PageSize: 50,
		Query: "WorkflowType = '" + contracts.SessionWorkflowName + "'",
	})
	if err != nil {
		return nil, err
	}
	out := []SessionItem{}
	seen := map[string]bool{}
	for _, e := range resp.Executions {
		id, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), sessionPrefix)
		if !ok || seen[id] { // continue-as-new leaves one closed execution per generation
			continue
		}
		seen[id] = true
		out = append(out, SessionItem{SessionID: id, StartedAt: e.GetStartTime().AsTime(),
			Status: strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))})
	}
	slices.SortStableFunc(out, func(a, b SessionItem) int { return b.StartedAt.Compare(a.StartedAt) })
	return out, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v) // the client may have gone
}

func writeError(w http.ResponseWriter, logger *slog.Logger, r *http.Request, err error) {
	httpapi.WriteError(w, r, logger, 0, err)
}
