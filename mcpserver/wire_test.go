package mcpserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/mcpserver"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
)

// rawSession is an MCP session driven with plain HTTP requests, to send what no client library
// sends: batches, unknown methods.
type rawSession struct {
	t       *testing.T
	url     string
	id      string // Mcp-Session-Id
	version string // the negotiated protocol version, sent as Mcp-Protocol-Version unless noHeader
	// noHeader leaves Mcp-Protocol-Version out, as a 2025-03-26 client does (the header came
	// with 2025-06-18).
	noHeader bool
}

// rawReply is an HTTP response: its status, content type and body.
type rawReply struct {
	status int
	ctype  string
	body   []byte
}

// messages are the JSON-RPC messages of an SSE reply's events, in order.
func (r rawReply) messages(t *testing.T) []string {
	t.Helper()
	require.Equal(t, "text/event-stream", r.ctype, "%s", r.body)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.TrimSpace(data) != "" {
			out = append(out, data)
		}
	}
	return out
}

func rawServer(t *testing.T) string {
	t.Helper()
	h, err := mcpserver.New(wireService(t, env.Client, stream.NewMemory(stream.MemoryOptions{}), helloRegistry(t), ""), mcpserver.Options{
		AllowUnauthenticated: true})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// openRaw initializes a session of protocol version (and sends notifications/initialized).
func openRaw(t *testing.T, url, version string) *rawSession {
	t.Helper()
	s := &rawSession{t: t, url: url, version: version}
	rep, hdr := s.postHeader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	require.Equal(t, http.StatusOK, rep.status, "%s", rep.body)
	s.id = hdr.Get("Mcp-Session-Id")
	require.NotEmpty(t, s.id)
	msgs := rep.messages(t)
	require.Len(t, msgs, 1)
	var init struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(msgs[0]), &init))
	require.Equal(t, version, init.Result.ProtocolVersion)
	rep = s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, rep.status, "%s", rep.body)
	return s
}

func (s *rawSession) post(body string) rawReply {
	s.t.Helper()
	rep, _ := s.postHeader(body, nil)
	return rep
}

func (s *rawSession) postHeader(body string, extra http.Header) (rawReply, http.Header) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		if !s.noHeader {
			req.Header.Set("Mcp-Protocol-Version", s.version)
		}
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return rawReply{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}, resp.Header
}

const pingAndList = `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}]`

// A batch is answered message by message in a 2025-03-26 session (with or without the
// Mcp-Protocol-Version header, which that version did not have), and refused from 2025-06-18
// on, which dropped JSON-RPC batching: HTTP 400, a JSON-RPC error.
func TestBatch(t *testing.T) {
	url := rawServer(t)
	for _, header := range []bool{true, false} {
		s := openRaw(t, url, "2025-03-26")
		s.noHeader = !header
		rep := s.post(pingAndList)
		require.Equal(t, http.StatusOK, rep.status, "%s", rep.body)
		msgs := rep.messages(t)
		require.Len(t, msgs, 2, "every request of the batch is answered: %q", msgs)
		// In any order (JSON-RPC's batch responses have none; the SDK runs them concurrently).
		if strings.Contains(msgs[0], `"tools"`) {
			msgs[0], msgs[1] = msgs[1], msgs[0]
		}
		require.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, msgs[0])
		var list struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(msgs[1]), &list))
		require.Equal(t, 3, list.ID)
		require.Len(t, list.Result.Tools, 1)
		require.Equal(t, "hello", list.Result.Tools[0].Name)
	}
	// An initialize request must not be part of a batch (2025-03-26 says so; later versions
	// have no batches): refused, and no session is opened.
	none := &rawSession{t: t, url: url}
	for _, version := range []string{"2025-03-26", "2025-11-25"} {
		rep, hdr := none.postHeader(`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}]`, nil)
		require.Equal(t, http.StatusBadRequest, rep.status)
		require.Empty(t, hdr.Get("Mcp-Session-Id"))
		msg := `The initialize request must not be part of a JSON-RPC batch; send it alone.`
		require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"`+msg+`",
			"data":{"version":1,"code":"INVALID_REQUEST","category":"request","message":"`+msg+`","retryable":false}}}`, string(rep.body))
	}
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		s := openRaw(t, url, version)
		rep := s.post(pingAndList)
		require.Equal(t, http.StatusBadRequest, rep.status)
		require.Equal(t, "application/json", rep.ctype)
		msg := `JSON-RPC batches are not part of MCP since 2025-06-18 (this request's version: ` + version + `); send one message per request.`
		require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"`+msg+`",
			"data":{"version":1,"code":"INVALID_REQUEST","category":"request","message":"`+msg+`","retryable":false}}}`, string(rep.body))
		// The session goes on: one message is answered.
		rep = s.post(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
		require.Equal(t, http.StatusOK, rep.status)
		require.Equal(t, []string{`{"jsonrpc":"2.0","id":4,"result":{}}`}, rep.messages(t))
	}
}

// A method the server does not have gets the JSON-RPC error -32601 (method not found): for a
// request, as its response (HTTP 200, its id); for a notification or in a batch, HTTP 400 with
// the error and no id. A session that does not exist is still the SDK's 404.
func TestUnknownMethod(t *testing.T) {
	url := rawServer(t)
	notFound := func(method string) string {
		msg := `Method not found: \"` + method + `\".`
		return `"error":{"code":-32601,"message":"` + msg + `","data":{"version":1,"code":"NOT_FOUND","category":"request","message":"` + msg + `","retryable":false}}`
	}
	for _, version := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			s := openRaw(t, url, version)
			rep := s.post(`{"jsonrpc":"2.0","id":"q-1","method":"tools/frobnicate","params":{}}`)
			require.Equal(t, http.StatusOK, rep.status)
			require.Equal(t, "application/json", rep.ctype)
			require.JSONEq(t, `{"jsonrpc":"2.0","id":"q-1",`+notFound("tools/frobnicate")+`}`, string(rep.body))

			rep = s.post(`{"jsonrpc":"2.0","method":"notifications/frobnicated"}`)
			require.Equal(t, http.StatusBadRequest, rep.status)
			require.JSONEq(t, `{"jsonrpc":"2.0","id":null,`+notFound("notifications/frobnicated")+`}`, string(rep.body))

			// The session goes on.
			rep = s.post(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
			require.Equal(t, []string{`{"jsonrpc":"2.0","id":5,"result":{}}`}, rep.messages(t))
		})
	}
	s := openRaw(t, url, "2025-03-26")
	rep := s.post(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/frobnicate"}]`)
	require.Equal(t, http.StatusBadRequest, rep.status)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":null,`+notFound("tools/frobnicate")+`}`, string(rep.body))

	// Without a session: the method is still unknown. With a session that does not exist:
	// the SDK's 404, which tells the client to initialize again.
	none := &rawSession{t: t, url: url}
	rep = none.post(`{"jsonrpc":"2.0","id":9,"method":"tools/frobnicate"}`)
	require.Equal(t, http.StatusOK, rep.status)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":9,`+notFound("tools/frobnicate")+`}`, string(rep.body))
	gone := &rawSession{t: t, url: url, id: "NO-SUCH-SESSION", version: "2025-11-25"}
	rep = gone.post(`{"jsonrpc":"2.0","id":9,"method":"tools/frobnicate"}`)
	require.Equal(t, http.StatusNotFound, rep.status)

	// The methods of features the server does not offer are the SDK's: in the session, empty
	// lists, or a JSON-RPC error.
	s = openRaw(t, url, "2025-11-25")
	for _, tc := range []struct{ request, list, error string }{
		{`{"jsonrpc":"2.0","id":20,"method":"prompts/list"}`, "prompts", ""},
		{`{"jsonrpc":"2.0","id":21,"method":"resources/list"}`, "resources", ""},
		{`{"jsonrpc":"2.0","id":22,"method":"resources/templates/list"}`, "resourceTemplates", ""},
		{`{"jsonrpc":"2.0","id":23,"method":"prompts/get","params":{"name":"x"}}`, "", `{"code":-32602,"message":"unknown prompt \"x\""}`},
		{`{"jsonrpc":"2.0","id":24,"method":"resources/read","params":{"uri":"file:///x"}}`, "", `{"code":-32602,"message":"Resource not found","data":{"uri":"file:///x"}}`},
		{`{"jsonrpc":"2.0","id":25,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}}`, "",
			`{"code":-32601,"message":"method not found: \"completion/complete\""}`},
	} {
		msgs := s.post(tc.request).messages(t)
		require.Len(t, msgs, 1)
		var got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(msgs[0]), &got))
		if tc.list != "" {
			var result map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(got["result"], &result), msgs[0])
			require.Equal(t, "[]", string(result[tc.list]), msgs[0])
			continue
		}
		require.JSONEq(t, tc.error, string(got["error"]), msgs[0])
	}
}
