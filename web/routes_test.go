package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

func get(t *testing.T, h http.Handler, path string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), rec.Body.String())
	return rec.Code, body
}

func TestRoutesErrors(t *testing.T) {
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, TemporalUIURL: "http://ui.example/"})
	code, body := get(t, h, "/api/runs/run-nobody/timeline")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "NOT_FOUND", body["failure"].(map[string]any)["code"])
	require.Equal(t, "No run run-nobody in this namespace.", body["error"])

	code, body = get(t, h, "/api/runs/bad%20id/timeline")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "INVALID_REQUEST", body["failure"].(map[string]any)["code"])

	code, body = get(t, h, "/api/config")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"temporalUiUrl": "http://ui.example", "namespace": "default", "defaultWorkflow": "", "agents": []any{}, "currency": "USD", "rawFailures": true}, body)

	reg := workflows.NewRegistry()
	require.NoError(t, registerAgents(reg))
	code, body = get(t, web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, Registry: reg, DefaultWorkflow: echoWorkflow}), "/api/config")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"temporalUiUrl": "", "namespace": "default", "defaultWorkflow": echoWorkflow, "agents": []any{
		map[string]any{"id": echoWorkflow, "description": echoDescription}, map[string]any{"id": failWorkflow},
		map[string]any{"id": formWorkflow}, map[string]any{"id": tickerWorkflow}}, "currency": "USD", "rawFailures": true}, body)
}

func TestPageIsEmbedded(t *testing.T) {
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	for path, ctype := range map[string]string{"/": "text/html; charset=utf-8", "/static/app.js": "text/javascript; charset=utf-8", "/static/app.css": "text/css; charset=utf-8", "/favicon.ico": "image/svg+xml"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Equal(t, ctype, rec.Header().Get("Content-Type"), path)
	}
}

func getRaw(t *testing.T, h http.Handler, path string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.Bytes()
}

// GET /api/workflows draws each agent from its definition: nodes with their kind, the edges.
func TestWorkflowsRoute(t *testing.T) {
	code, body := getRaw(t, web.Handler(web.Options{Client: tc, AllowUnauthenticated: true}), "/api/workflows")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `[]`, string(body))

	reg := workflows.NewRegistry()
	require.NoError(t, registerAgents(reg))
	def, err := workflows.Load([]byte(`id: web-graph
version: "2"
description: A graph
nodes:
  ask: {run: web.ask, behavior: {retry: {maxAttempts: 2}}}
  answer: {run: kortyx.reason, params: {system: Answer}}
edges:
  - [__start__, ask]
  - [ask, answer, {when: ok}]
  - [ask, __end__, {when: done}]
  - [answer, __end__]
`))
	require.NoError(t, err)
	require.NoError(t, reg.RegisterNode("web.ask", func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		return workflows.NodeResult{}, nil
	}))
	require.NoError(t, reg.Add(def))
	code, body = getRaw(t, web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, Registry: reg}), "/api/workflows")
	require.Equal(t, http.StatusOK, code)
	var list []map[string]any
	require.NoError(t, json.Unmarshal(body, &list))
	var got map[string]any
	var ids []string
	for _, g := range list {
		ids = append(ids, g["id"].(string))
		if g["id"] == "web-graph" {
			got = g
		}
	}
	require.Equal(t, []string{"web-echo", "web-fail", "web-form", "web-graph", "web-ticker"}, ids)
	require.Equal(t, reg.Fingerprint("web-graph"), got["fingerprint"])
	delete(got, "fingerprint")
	want := `{"id":"web-graph","version":"2","description":"A graph",
	  "nodes":[{"id":"answer","run":"kortyx.reason","params":{"system":"Answer"},"kind":"reason"},
	    {"id":"ask","run":"web.ask","retry":{"maxAttempts":2},"kind":"registered"},
	    {"id":"__start__","kind":"start"},{"id":"__end__","kind":"end"}],
	  "edges":[{"from":"__start__","to":"ask"},{"from":"ask","to":"answer","when":"ok"},{"from":"ask","to":"__end__","when":"done"},{"from":"answer","to":"__end__"}]}`
	b, _ := json.Marshal(got)
	require.JSONEq(t, want, string(b))
}
