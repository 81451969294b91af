package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
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
	h := web.Handler(web.Options{Client: tc, TemporalUIURL: "http://ui.example/"})
	code, body := get(t, h, "/api/runs/run-nobody/timeline")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "NOT_FOUND", body["failure"].(map[string]any)["code"])
	require.Equal(t, "No run run-nobody in this namespace.", body["error"])

	code, body = get(t, h, "/api/runs/bad%20id/timeline")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "INVALID_REQUEST", body["failure"].(map[string]any)["code"])

	code, body = get(t, h, "/api/config")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"temporalUiUrl": "http://ui.example", "namespace": "default", "defaultWorkflow": "", "agents": []any{}}, body)

	reg := workflows.NewRegistry()
	require.NoError(t, registerAgents(reg))
	code, body = get(t, web.Handler(web.Options{Client: tc, Registry: reg, DefaultWorkflow: echoWorkflow}), "/api/config")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"temporalUiUrl": "", "namespace": "default", "defaultWorkflow": echoWorkflow, "agents": []any{
		map[string]any{"id": echoWorkflow, "description": echoDescription}, map[string]any{"id": failWorkflow},
		map[string]any{"id": formWorkflow}, map[string]any{"id": tickerWorkflow}}}, body)
}

func TestPageIsEmbedded(t *testing.T) {
	h := web.Handler(web.Options{Client: tc})
	for path, ctype := range map[string]string{"/": "text/html; charset=utf-8", "/static/app.js": "text/javascript; charset=utf-8", "/static/app.css": "text/css; charset=utf-8", "/favicon.ico": "image/svg+xml"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Equal(t, ctype, rec.Header().Get("Content-Type"), path)
	}
}
