package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

//go:embed static
var static embed.FS

// Patterns are the routes [Handler] serves, to mount it on a mux that has other routes:
//
//	for _, p := range web.Patterns() { mux.Handle(p, h) }
func Patterns() []string {
	return []string{"GET /{$}", "GET /static/", "GET /favicon.ico", "GET /api/config", "GET /api/sessions", "GET /api/sessions/{id}", "GET /api/runs/{id}/timeline", "GET /api/runs", "GET /api/runs/{id}", "GET /api/interrupts", "GET /api/workflows", "GET /api/cost", "GET /api/sessions/{id}/transcript", "POST /api/runs/{id}/answer", "GET /api/overview", "GET /api/budgets", "GET /api/budgets/{scope}/{key}"}
}

// Options configure [Handler].
type Options struct {
	// TaskQueue is the workers' task queue, whose shared budgets' ledgers /api/budgets reads
	// (docs/budgets.md; "": ?queue= must name it).
	TaskQueue string
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
	// Registry, when set, is the worker's registry: /api/config lists its workflows, which the
	// page suggests in its agent field (nil: no suggestions).
	Registry *workflows.Registry
	// DefaultWorkflow is the workflow the chat route runs when a first turn names none ("":
	// none), shown in the agent field.
	DefaultWorkflow string
	// Prices price the runs' tokens by "provider:model" in the traces (GET /api/runs/{id}:
	// cost); nil prices nothing. See [LoadPrices].
	Prices map[string]Price
	// DefaultModel ("provider:model") is the model of the passes that name none: the worker's
	// default. "": such passes are priced under the key "default".
	DefaultModel string
	// Currency is the currency of the price table and of ActionPrice, shown with every cost
	// ("": [DefaultCurrency], USD).
	Currency string
	// ActionPrice is the price per million Temporal actions, in Currency, at which the studio
	// estimates what each run's actions cost (counted from its history; nil:
	// [DefaultActionPrice]; 0 for a server that bills no actions, e.g. a self-hosted one).
	ActionPrice *float64

	// Authorize is asked before every JSON route ([sessions.Access] with Wire "web"; Action
	// "answer" for POST /api/runs/{id}/answer with RunID, "read" otherwise, with the session a
	// route names); it refuses with a *contracts.Error of CodeUnauthorized or CodeForbidden
	// (another error refuses with FORBIDDEN). The same hook as the protocol wires'. Without it
	// every JSON route is refused with UNAUTHORIZED unless AllowUnauthenticated
	// (development: app.ServeHTTP sets it).
	Authorize            func(r *http.Request, a sessions.Access) error
	AllowUnauthenticated bool
	// RawFailures, when set, says whether a request may read the raw causes of failures
	// (GET /api/runs/{id}?raw=1: the Go error text behind a failure's code and safe message,
	// for operators); a request it refuses is FORBIDDEN. Nil: only a studio without an
	// Authorize hook that AllowUnauthenticated opens (development) gives them.
	RawFailures func(r *http.Request) bool
	// Broker, when set, is the stream broker: an answer from the studio to a session's
	// question then says where its response begins in the run's stream.
	Broker stream.Broker

	cache         *spendCache    // closed runs' spend, made by Handler
	overviewCache *overviewCache // what the overview reads once per run, made by Handler
}

// config is the answer of GET /api/config.
type config struct {
	TemporalUIURL   string  `json:"temporalUiUrl"`
	Namespace       string  `json:"namespace"`
	DefaultWorkflow string  `json:"defaultWorkflow"`
	Agents          []agent `json:"agents"`
	// DefaultModel is the model of the passes that name none (Options.DefaultModel); Currency
	// the price table's (Options.Currency, default "USD").
	DefaultModel string `json:"defaultModel,omitempty"`
	Currency     string `json:"currency"`
	// RawFailures says whether this request may ask a trace's raw failures (?raw=1).
	RawFailures bool `json:"rawFailures"`
}

// agent is a registered workflow, as the page suggests it.
type agent struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
}

// Handler serves the page at GET / (its files under /static/, its icon at /favicon.ico) and the
// JSON routes it needs:
//
//	GET /api/config                  [config]: the Temporal UI link, the agents
//	GET /api/sessions                the namespace's sessions, latest activity first
//	GET /api/sessions/{id}           the session's view (sessions.SessionView)
//	GET /api/runs/{id}/timeline      the run's timeline (also GET /api/runs/{id}, the trace)
//	GET /api/runs                    the runs, newest first, filtered and paged (docs/web.md)
//	GET /api/interrupts              every waiting question, oldest first
//	GET /api/workflows               the agents and their graphs
//	GET /api/cost                    tokens and cost of the runs, by agent or session
//	GET /api/sessions/{id}/transcript the session's runs with their prompts and traces
//	POST /api/runs/{id}/answer       an answer to the run's open question
//	GET /api/overview                runs by status, waiting questions by age, failures by code
//
// Errors are JSON {error, failure} like the chat route's. Mount it on the API's mux next to the
// chat, Stop and checkpoint routes ([Patterns]). Every JSON route asks Options.Authorize first
// (without it, only AllowUnauthenticated opens them); the page and its files need none.
func Handler(o Options) http.Handler {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.cache = &spendCache{}
	o.overviewCache = &overviewCache{}
	svc, svcErr := sessions.New(sessions.Options{Client: o.Client, Broker: o.Broker})
	files, _ := fs.Sub(static, "static") // the embedded directory exists
	mux := http.NewServeMux()
	page, _ := fs.ReadFile(files, "index.html")
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(page)
	})
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(files)))
	icon, _ := fs.ReadFile(files, "favicon.svg")
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "max-age=86400")
		_, _ = w.Write(icon)
	})
	mux.HandleFunc("GET /api/config", func(w http.ResponseWriter, r *http.Request) {
		if err := o.authorize(r, access(r)); err != nil {
			writeError(w, o.Logger, r, err)
			return
		}
		cfg := config{TemporalUIURL: strings.TrimRight(o.TemporalUIURL, "/"), Namespace: o.Namespace, DefaultWorkflow: o.DefaultWorkflow, Agents: []agent{},
			DefaultModel: o.DefaultModel, Currency: o.Currency, RawFailures: o.mayReadRaw(r)}
		if cfg.Currency == "" {
			cfg.Currency = "USD"
		}
		if o.Registry != nil {
			for _, d := range o.Registry.Workflows() {
				cfg.Agents = append(cfg.Agents, agent{ID: d.ID, Description: d.Description})
			}
		}
		writeJSON(w, cfg)
	})
	mux.HandleFunc("GET /api/sessions", o.serve(o.sessions))
	mux.HandleFunc("GET /api/sessions/{id}", o.serve(func(r *http.Request) (any, error) {
		id := r.PathValue("id")
		if err := contracts.CheckID("sessionId", id); err != nil {
			return nil, err
		}
		if svcErr != nil {
			return nil, svcErr
		}
		return svc.View(r.Context(), id)
	}))
	mux.HandleFunc("GET /api/runs", o.serve(o.runs))
	mux.HandleFunc("GET /api/interrupts", o.serve(o.interrupts))
	mux.HandleFunc("GET /api/workflows", o.serve(o.workflowsList))
	mux.HandleFunc("GET /api/cost", o.serve(o.cost))
	mux.HandleFunc("GET /api/overview", o.serve(o.overview))
	mux.HandleFunc("GET /api/budgets", o.serve(o.budgets))
	mux.HandleFunc("GET /api/budgets/{scope}/{key}", o.serve(o.budget))
	mux.HandleFunc("GET /api/sessions/{id}/transcript", o.serve(func(r *http.Request) (any, error) {
		id := r.PathValue("id")
		if err := contracts.CheckID("sessionId", id); err != nil {
			return nil, err
		}
		var s *sessions.Service
		if svcErr == nil {
			s = svc
		}
		return o.transcriptOf(r.Context(), s, id)
	}))
	mux.HandleFunc("POST /api/runs/{id}/answer", func(w http.ResponseWriter, r *http.Request) {
		if err := o.authorize(r, access(r)); err != nil {
			writeError(w, o.Logger, r, err)
			return
		}
		var s *sessions.Service
		if svcErr == nil {
			s = svc
		}
		v, err := o.answer(w, r, s)
		if err != nil {
			writeError(w, o.Logger, r, err)
			return
		}
		writeJSON(w, v)
	})
	trace := o.serve(func(r *http.Request) (any, error) {
		id := r.PathValue("id")
		if err := contracts.CheckID("runId", id); err != nil {
			return nil, err
		}
		raw, err := o.rawAllowed(r)
		if err != nil {
			return nil, err
		}
		v, err := o.trace(r.Context(), id)
		if err == nil && !raw {
			v.stripRaw()
		}
		return v, err
	})
	mux.HandleFunc("GET /api/runs/{id}/timeline", trace)
	mux.HandleFunc("GET /api/runs/{id}", trace)
	return mux
}

func (o Options) serve(f func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := o.authorize(r, access(r)); err != nil {
			writeError(w, o.Logger, r, err)
			return
		}
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

// sessionItem is one session of the sessions list.
type sessionItem struct {
	SessionID string    `json:"sessionId"`
	StartedAt time.Time `json:"startedAt"`
	// LastActivityAt is when the session's latest run started or ended (StartedAt when it has
	// no run).
	LastActivityAt time.Time `json:"lastActivityAt"`
	// Agent is the workflow of the session's latest run (its KortyxWorkflow search attribute;
	// "" when it has no run).
	Agent string `json:"agent"`
	// Status is the KortyxStatus of the session's latest run: running, waiting (for an
	// answer), completed, failed or cancelled; "new" when it has no run.
	Status string `json:"status"`
	// RunID is the session's latest run ("" when it has none).
	RunID string `json:"runId,omitempty"`
	// Turns counts the session's runs: one per prompt (answers continue their run), not the
	// generations a long run continued as new into, nor child runs.
	Turns int `json:"turns"`
}

const sessionPrefix = "kortyx-session:"

// maxSessions is how many session executions the list asks visibility for, and maxRuns how many
// runs of those sessions.
const (
	maxSessions = 50
	maxRuns     = 1000
)

// sessions lists the namespace's session workflows (kortyx-session:<id>) and, from the
// search attributes of their runs (KortyxSession, KortyxWorkflow, KortyxStatus), each one's
// agent, status and last activity.
func (o Options) sessions(r *http.Request) (any, error) {
	resp, err := o.Client.ListWorkflow(r.Context(), &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: o.Namespace, PageSize: maxSessions,
		Query: "WorkflowType = '" + protocol.SessionWorkflowName + "'",
	})
	if err != nil {
		return nil, err
	}
	out := []sessionItem{}
	index := map[string]int{}
	for _, e := range resp.Executions {
		id, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), sessionPrefix)
		if !ok {
			continue
		}
		start := e.GetStartTime().AsTime()
		if i, seen := index[id]; seen { // continue-as-new leaves one closed execution per generation
			if start.Before(out[i].StartedAt) {
				out[i].StartedAt = start
			}
			continue
		}
		index[id] = len(out)
		out = append(out, sessionItem{SessionID: id, StartedAt: start, Status: "new"})
	}
	for i := range out {
		out[i].LastActivityAt = out[i].StartedAt
	}
	if len(out) > 0 {
		if err := o.latestRuns(r.Context(), out, index); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b sessionItem) int { return b.LastActivityAt.Compare(a.LastActivityAt) })
	return out, nil
}

// latestRuns fills in each session's agent, status and last activity from its runs: the runs
// the session started (children of its workflow) and runs started with its session id.
func (o Options) latestRuns(ctx context.Context, items []sessionItem, index map[string]int) error {
	resp, err := o.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: o.Namespace, PageSize: maxRuns,
		Query: "WorkflowType = '" + contracts.RunWorkflowName + "' AND (" + sessionsFilter(items) + ")",
	})
	if err != nil {
		return err
	}
	latest := map[string]time.Time{} // session → start of its latest run
	for _, e := range resp.Executions {
		if p := e.GetParentExecution().GetWorkflowId(); p != "" && !strings.HasPrefix(p, sessionPrefix) {
			continue // a child run of a run
		}
		sa := e.GetSearchAttributes().GetIndexedFields()
		var session, agent, status string
		if err := decodeKeyword(sa[contracts.SearchAttributeSession], &session); err != nil {
			continue
		}
		i, ok := index[session]
		if !ok {
			continue
		}
		_ = decodeKeyword(sa[contracts.SearchAttributeWorkflow], &agent) // absent: ""
		_ = decodeKeyword(sa[contracts.SearchAttributeStatus], &status)
		start, end := e.GetStartTime().AsTime(), e.GetCloseTime().AsTime()
		s := &items[i]
		if e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
			s.Turns++
		}
		for _, t := range []time.Time{start, end} {
			if t.After(s.LastActivityAt) {
				s.LastActivityAt = t
			}
		}
		if prev, seen := latest[session]; seen && !start.After(prev) {
			continue
		}
		latest[session] = start
		s.Agent, s.RunID, s.Status = agent, e.GetExecution().GetWorkflowId(), runStatus(status, e.GetStatus())
	}
	return nil
}

// sessionsFilter is the visibility condition on KortyxSession that matches the runs of the
// sessions: IN (…) for plain ids. A string literal with an escaped quote or backslash matches
// nothing on the dev server's visibility store (measured), so an id with ', " or \ is matched
// by the part before that character (STARTS_WITH); the caller keeps only exact matches.
func sessionsFilter(items []sessionItem) string {
	var plain, conds []string
	prefixes := map[string]bool{}
	for _, s := range items {
		if i := strings.IndexAny(s.SessionID, `'"\`); i >= 0 {
			if p := s.SessionID[:i]; !prefixes[p] {
				prefixes[p] = true
				conds = append(conds, contracts.SearchAttributeSession+" STARTS_WITH '"+p+"'")
			}
			continue
		}
		plain = append(plain, "'"+s.SessionID+"'")
	}
	if len(plain) > 0 {
		conds = append(conds, contracts.SearchAttributeSession+" IN ("+strings.Join(plain, ", ")+")")
	}
	return strings.Join(conds, " OR ")
}

// decodeKeyword decodes a Keyword search attribute.
func decodeKeyword(p *commonpb.Payload, out *string) error {
	if p == nil {
		return errors.New("no value")
	}
	return converter.GetDefaultDataConverter().FromPayload(p, out)
}

// runStatus is a run's status: its KortyxStatus, or for a run that closed without setting a
// final one (terminated, timed out), what Temporal says.
func runStatus(kortyxStatus string, temporal enumspb.WorkflowExecutionStatus) string {
	switch contracts.RunStatus(kortyxStatus) {
	case contracts.StatusCompleted, contracts.StatusFailed, contracts.StatusCancelled:
		return kortyxStatus
	}
	switch temporal {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		if kortyxStatus == "" {
			return string(contracts.StatusRunning)
		}
		return kortyxStatus
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return string(contracts.StatusCompleted)
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return string(contracts.StatusCancelled)
	default: // failed, terminated, timed out
		return string(contracts.StatusFailed)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v) // the client may have gone
}

func writeError(w http.ResponseWriter, logger *slog.Logger, r *http.Request, err error) {
	httpwire.WriteError(w, r, logger, 0, err)
}
