package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/mcpserver"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// statelessStack is a worker of the support and hello examples (and the test agents) and
// MCP handlers over it that serve 2026-07-28, each on an HTTP server of its own.
type statelessStack struct {
	set  *examples.Set
	urls []string
}

// startStateless runs the worker and one handler per options in os (StatelessRevision on,
// unauthenticated unless Authorize is set), each with the worker's client and broker.
func startStateless(t *testing.T, os ...mcpserver.Options) *statelessStack {
	t.Helper()
	set, err := examples.Parse("support,hello")
	require.NoError(t, err)
	tq := fmt.Sprintf("mcp-v2-%d", time.Now().UnixNano())
	o := set.Options()
	register := func(reg *workflows.Registry) error {
		if err := set.Register(reg); err != nil {
			return err
		}
		return registerTestAgents(reg)
	}
	o.Register = register
	r := testenv.Run(t, context.Background(), app.Config{TemporalAddress: env.Server.Address(), TaskQueue: tq, Namespace: "default",
		HTTPAddr: "127.0.0.1:0", FakeModels: true}, o)
	s := &statelessStack{set: set}
	for _, mo := range os {
		reg := workflows.NewRegistry()
		require.NoError(t, register(reg))
		mo.StatelessRevision = true
		mo.AllowUnauthenticated = mo.Authorize == nil
		h, err := mcpserver.New(wireService(t, r.Client, r.Broker, reg, tq), mo)
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		s.urls = append(s.urls, srv.URL)
	}
	return s
}

// elicitCaps are the client capabilities of a client that answers form elicitations.
var elicitCaps = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}

// v2Reply is the reply to a request of 2026-07-28: HTTP status, headers and JSON-RPC response.
type v2Reply struct {
	status int
	header http.Header
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// failure is the failure descriptor of a JSON-RPC error's data.
func (r v2Reply) failure(t *testing.T) contracts.Failure {
	t.Helper()
	require.NotNil(t, r.Error)
	var f contracts.Failure
	require.NoError(t, json.Unmarshal(r.Error.Data, &f), "%s", r.Error.Data)
	return f
}

// callResult is what the tests read of a tools/call result of 2026-07-28.
type callResult struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
			Meta            map[string]any  `json:"_meta"`
		} `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
	Content      []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool           `json:"isError"`
	Meta    map[string]any `json:"_meta"`
}

// key is the one key of an input-required result's inputRequests.
func (c callResult) key(t *testing.T) string {
	t.Helper()
	require.Len(t, c.InputRequests, 1)
	for k := range c.InputRequests {
		return k
	}
	return ""
}

func (r v2Reply) call(t *testing.T) callResult {
	t.Helper()
	require.Nil(t, r.Error, "%+v", r.Error)
	var c callResult
	require.NoError(t, json.Unmarshal(r.Result, &c), "%s", r.Result)
	return c
}

// post2026 sends one request of protocol 2026-07-28 to url: the Mcp-Protocol-Version,
// Mcp-Method and Mcp-Name headers, and _meta with the protocol version, client info and caps
// (none when caps is nil) merged into params' own _meta. It reads the JSON-RPC response from a
// JSON or an SSE reply.
func post2026(t *testing.T, url, method string, params map[string]any, caps map[string]any) v2Reply {
	t.Helper()
	return post2026With(t, url, method, params, caps, nil)
}

// post2026With is post2026 with extra HTTP headers.
func post2026With(t *testing.T, url, method string, params map[string]any, caps map[string]any, extra http.Header) v2Reply {
	t.Helper()
	meta, _ := params["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
	meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "raw", "version": "1"}
	if caps != nil {
		meta["io.modelcontextprotocol/clientCapabilities"] = caps
	}
	params["_meta"] = meta
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	require.NoError(t, err)
	hdr := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}}
	if name, ok := params["name"].(string); ok {
		hdr.Set("Mcp-Name", name)
	}
	for k, v := range extra {
		hdr[k] = v
	}
	return postRaw(t, url, body, hdr)
}

func postRaw(t *testing.T, url string, body []byte, hdr http.Header) v2Reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := v2Reply{status: resp.StatusCode, header: resp.Header}
	msg := b
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id"`) {
				msg = []byte(data) // the response: the events before it are notifications
			}
		}
	}
	require.NoError(t, json.Unmarshal(msg, &r), "HTTP %d: %s", resp.StatusCode, b)
	return r
}

// answer is the retry of a tools/call with the input response of key and state.
func answer(name string, args, meta map[string]any, key string, response map[string]any, state string) map[string]any {
	p := map[string]any{"name": name, "arguments": args, "requestState": state}
	if meta != nil {
		p["_meta"] = meta
	}
	if key != "" {
		p["inputResponses"] = map[string]any{key: response}
	}
	return p
}

func accepted(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

// A 2026-07-28 client: server/discover, tools/list and calls without a session; hello's
// question is an input-required result whose requestState the next call sends back with the
// answer; a state is refused (-32602, INVALID_RESUME) once its question is answered, when it
// was changed, and on another tool; a missing or malformed answer gets the question again.
func TestStatelessRevision(t *testing.T) {
	s := startStateless(t, mcpserver.Options{})
	url := s.urls[0]

	r := post2026(t, url, "server/discover", map[string]any{}, elicitCaps)
	require.Equal(t, http.StatusOK, r.status)
	require.Empty(t, r.header.Get("Mcp-Session-Id"))
	var disc struct {
		ResultType        string         `json:"resultType"`
		SupportedVersions []string       `json:"supportedVersions"`
		Capabilities      map[string]any `json:"capabilities"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &disc), "%s", r.Result)
	require.Equal(t, "complete", disc.ResultType)
	require.Equal(t, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, disc.SupportedVersions)
	require.Contains(t, disc.Capabilities, "tools")

	r = post2026(t, url, "tools/list", map[string]any{}, elicitCaps)
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &list))
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	require.Equal(t, []string{"hello", "order", "score", "ship", "shout", "slow", "support"}, names)

	// A call that completes.
	c := post2026(t, url, "tools/call", map[string]any{"name": "score", "arguments": map[string]any{"name": "Grace"}}, elicitCaps).call(t)
	require.Equal(t, "complete", c.ResultType)
	require.Equal(t, "Scored Grace.", c.Content[0].Text)
	require.Equal(t, "completed", c.Meta["kortyx/status"])

	// hello's question: an input-required result.
	args := map[string]any{"message": "hi"}
	meta := map[string]any{"kortyx/sessionId": "v2-hello-1"}
	r = post2026(t, url, "tools/call", map[string]any{"name": "hello", "arguments": args, "_meta": map[string]any{"kortyx/sessionId": "v2-hello-1"}}, elicitCaps)
	require.Empty(t, r.header.Get("Mcp-Session-Id"))
	c = r.call(t)
	require.Equal(t, "input_required", c.ResultType)
	key := c.key(t)
	require.Equal(t, "name", key)
	ir := c.InputRequests[key]
	require.Equal(t, "elicitation/create", ir.Method)
	require.Equal(t, "What is your name?", ir.Params.Message)
	require.JSONEq(t, textElicit, string(ir.Params.RequestedSchema))
	require.Equal(t, "v2-hello-1", ir.Params.Meta["kortyx/sessionId"])
	require.Equal(t, "waiting", c.Meta["kortyx/status"])
	require.Empty(t, c.Content)
	state := c.RequestState
	require.NotEmpty(t, state)

	// A changed state, and the state of hello on another tool: forged.
	for _, p := range []map[string]any{
		answer("hello", args, meta, key, accepted(map[string]any{"answer": "Ada"}), state+"x"),
		answer("shout", map[string]any{"input": "x"}, meta, key, accepted(map[string]any{"answer": "Ada"}), state),
	} {
		r = post2026(t, url, "tools/call", p, elicitCaps)
		require.NotNil(t, r.Error, "%s", r.Result)
		require.Equal(t, int64(-32602), r.Error.Code)
		f := r.failure(t)
		require.Equal(t, contracts.CodeInvalidResume, f.Code)
		require.Equal(t, "The requestState was not issued by this server for this tool and caller, or was changed: call the tool again without inputResponses and requestState.", f.Message)
	}

	// No answer, then an answer that does not match the form: the question again, with a
	// new state (the old one stays good: the question is still open).
	c = post2026(t, url, "tools/call", answer("hello", args, meta, "", nil, state), elicitCaps).call(t)
	require.Equal(t, "input_required", c.ResultType)
	require.Equal(t, key, c.key(t))
	require.Nil(t, c.Meta["kortyx/failure"])
	c = post2026(t, url, "tools/call", answer("hello", args, meta, key, accepted(map[string]any{"answer": 5}), c.RequestState), elicitCaps).call(t)
	require.Equal(t, "input_required", c.ResultType)
	failure, _ := c.Meta["kortyx/failure"].(map[string]any)
	require.Equal(t, "INVALID_RESPONSE", failure["code"], "%v", c.Meta)

	// The answer, with extra input responses the server ignores: the run goes on.
	p := answer("hello", args, meta, key, accepted(map[string]any{"answer": "Ada"}), state)
	p["inputResponses"].(map[string]any)["unknown"] = map[string]any{"action": "decline"}
	c = post2026(t, url, "tools/call", p, elicitCaps).call(t)
	require.Equal(t, "complete", c.ResultType)
	require.False(t, c.IsError)
	require.Equal(t, "Hello, Ada!", c.Content[0].Text)
	require.Equal(t, "completed", c.Meta["kortyx/status"])
	require.Equal(t, ir.Params.Meta["kortyx/runId"], c.Meta["kortyx/runId"])

	// The same state again: its question is answered.
	r = post2026(t, url, "tools/call", answer("hello", args, meta, key, accepted(map[string]any{"answer": "Bob"}), state), elicitCaps)
	require.NotNil(t, r.Error, "%s", r.Result)
	require.Equal(t, int64(-32602), r.Error.Code)
	f := r.failure(t)
	require.Equal(t, contracts.CodeInvalidResume, f.Code)
	require.Contains(t, f.Message, "The question this requestState answers is no longer open")

	// A client without the elicitation capability: the result says the run waits.
	c = post2026(t, url, "tools/call", map[string]any{"name": "hello", "arguments": args}, map[string]any{}).call(t)
	require.Equal(t, "complete", c.ResultType)
	require.Empty(t, c.InputRequests)
	require.Equal(t, "waiting", c.Meta["kortyx/status"])
	require.True(t, strings.HasPrefix(c.Content[0].Text, "The run waits for an answer: What is your name? Call hello again with _meta"), c.Content[0].Text)
}

// With the same RequestStateKey, a state issued by one API process is answered on another;
// with another key (or none: a random one) it is refused there, and a call naming the session
// gets the question again. With Options.Owner, a state is refused for another caller.
func TestStatelessStateKey(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	owner := func(r *http.Request) string { return r.Header.Get("X-Caller") }
	s := startStateless(t, mcpserver.Options{RequestStateKey: key, Owner: owner}, mcpserver.Options{RequestStateKey: key, Owner: owner},
		mcpserver.Options{Owner: owner})
	ada := http.Header{"X-Caller": {"ada"}}
	args := map[string]any{"message": "hi"}
	meta := map[string]any{"kortyx/sessionId": "v2-key-1"}
	c := post2026With(t, s.urls[0], "tools/call", map[string]any{"name": "hello", "arguments": args, "_meta": map[string]any{"kortyx/sessionId": "v2-key-1"}}, elicitCaps, ada).call(t)
	require.Equal(t, "input_required", c.ResultType)
	k := c.key(t)
	reply := func(url, state string, hdr http.Header) v2Reply {
		return post2026With(t, url, "tools/call", answer("hello", args, meta, k, accepted(map[string]any{"answer": "Ada"}), state), elicitCaps, hdr)
	}

	for _, r := range []v2Reply{reply(s.urls[2], c.RequestState, ada), reply(s.urls[1], c.RequestState, http.Header{"X-Caller": {"bob"}})} {
		require.NotNil(t, r.Error)
		require.Equal(t, int64(-32602), r.Error.Code)
		require.Equal(t, contracts.CodeInvalidResume, r.failure(t).Code)
	}
	again := post2026With(t, s.urls[2], "tools/call", map[string]any{"name": "hello", "arguments": args, "_meta": map[string]any{"kortyx/sessionId": "v2-key-1"}}, elicitCaps, ada).call(t)
	require.Equal(t, "input_required", again.ResultType)
	require.Equal(t, k, again.key(t))

	c = reply(s.urls[1], c.RequestState, ada).call(t)
	require.Equal(t, "complete", c.ResultType)
	require.Equal(t, "Hello, Ada!", c.Content[0].Text)
}

// Requests of 2026-07-28 that are not right get a JSON-RPC error with an exact code; without
// StatelessRevision the revision is refused as before.
func TestStatelessBadInput(t *testing.T) {
	_, err := mcpserver.New(wireService(t, env.Client, stream.NewMemory(stream.MemoryOptions{}), helloRegistry(t), ""), mcpserver.Options{
		AllowUnauthenticated: true, StatelessRevision: true, RequestStateKey: []byte("short")})
	require.EqualError(t, err, "kortyx mcpserver: Options.RequestStateKey has 5 bytes: give it at least 32 random bytes (or none, for a random key per process)")

	h, err := mcpserver.New(wireService(t, env.Client, stream.NewMemory(stream.MemoryOptions{}), helloRegistry(t), ""), mcpserver.Options{
		AllowUnauthenticated: true, StatelessRevision: true})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hello","arguments":{"message":"hi"},"_meta":%s}}`
	full := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	v2 := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"hello"}}
	for _, tc := range []struct {
		name   string
		body   string
		hdr    http.Header
		status int
		code   int64
	}{
		{"no _meta protocol version", fmt.Sprintf(call, `{}`), v2, http.StatusBadRequest, -32602},
		{"no Mcp-Protocol-Version header", fmt.Sprintf(call, full), http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"hello"}}, http.StatusBadRequest, -32020},
		{"header and _meta disagree", fmt.Sprintf(call, full), http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"hello"}}, http.StatusBadRequest, -32020},
		{"no client capabilities", fmt.Sprintf(call, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), v2, http.StatusBadRequest, -32602},
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"raw","version":"1"},"_meta":` + full + `}}`,
			http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"initialize"}}, http.StatusNotFound, -32601},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := postRaw(t, srv.URL, []byte(tc.body), tc.hdr)
			require.Equal(t, tc.status, r.status)
			require.NotNil(t, r.Error)
			require.Equal(t, tc.code, r.Error.Code, r.Error.Message)
		})
	}

	t.Run("forged requestState", func(t *testing.T) {
		for _, state := range []string{"x", "k1.e30.AAAA", "k1..", strings.Repeat("k1.", 3)} {
			r := post2026(t, srv.URL, "tools/call", answer("hello", map[string]any{"message": "hi"}, nil, "name", accepted(map[string]any{"answer": "Ada"}), state), elicitCaps)
			require.NotNil(t, r.Error)
			require.Equal(t, int64(-32602), r.Error.Code)
			require.Equal(t, contracts.CodeInvalidResume, r.failure(t).Code)
			require.NotContains(t, string(r.Error.Data), "hmac")
		}
	})

	t.Run("GET and DELETE", func(t *testing.T) {
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			req, err := http.NewRequest(method, srv.URL, nil)
			require.NoError(t, err)
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
		}
	})

	t.Run("StatelessRevision off", func(t *testing.T) {
		url := rawServer(t)
		r := post2026(t, url, "tools/list", map[string]any{}, elicitCaps)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.NotNil(t, r.Error)
		require.Equal(t, int64(-32022), r.Error.Code)
		var data struct {
			Supported []string `json:"supported"`
		}
		require.NoError(t, json.Unmarshal(r.Error.Data, &data))
		require.NotContains(t, data.Supported, "2026-07-28")
		require.Contains(t, data.Supported, "2025-11-25")
	})
}

// nodeCallError is the "callError" event of test/npmclients/mcp-v2.mjs.
type nodeCallError struct {
	Message string            `json:"message"`
	Code    int64             `json:"code"`
	Data    contracts.Failure `json:"data"`
}

// TestNodeClientV2 drives the server with the official 2.x TypeScript client
// (@modelcontextprotocol/client), which negotiates 2026-07-28 itself: server/discover, the
// tools, a call that completes, hello's question and support's approval answered through
// input-required results (the refund runs once), and, in the client's manual mode, a changed
// requestState and an answered one refused with -32602.
func TestNodeClientV2(t *testing.T) {
	s := startStateless(t, mcpserver.Options{})
	p := nodeclient.Start(t, "mcp-v2.mjs", nil, s.urls[0])
	var ready struct {
		Era     string `json:"era"`
		Version string `json:"version"`
	}
	p.Expect("ready", nodeWait).Decode(t, &ready)
	require.Equal(t, "modern", ready.Era)
	require.Equal(t, "2026-07-28", ready.Version)

	p.Send(map[string]any{"op": "discover"})
	var disc struct {
		Result struct {
			SupportedVersions []string       `json:"supportedVersions"`
			Capabilities      map[string]any `json:"capabilities"`
		} `json:"result"`
	}
	p.Expect("discovered", nodeWait).Decode(t, &disc)
	require.Equal(t, "2026-07-28", disc.Result.SupportedVersions[0])
	require.Contains(t, disc.Result.SupportedVersions, "2025-11-25")
	require.Contains(t, disc.Result.Capabilities, "tools")

	p.Send(map[string]any{"op": "list"})
	var tools struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	p.Expect("tools", nodeWait).Decode(t, &tools)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	require.Equal(t, []string{"hello", "order", "score", "ship", "shout", "slow", "support"}, names)

	// A call that completes, with structuredContent (the client checks the output schema).
	nodeCallArgs(p, "score", map[string]any{"name": "Grace"}, nil, false)
	r := expectResult(t, p)
	require.False(t, r.Result.IsError)
	require.Equal(t, "Scored Grace.", r.Result.Content[0].Text)
	require.JSONEq(t, `{"score":5}`, string(r.Result.StructuredContent))

	// hello: the question is an input-required result the client fulfils with its
	// elicitation handler; its answer resumes the run.
	nodeCall(p, "hello", "hi", map[string]any{"kortyx/sessionId": "node-v2-hello-1"}, false)
	e := expectElicit(t, p)
	require.Equal(t, "What is your name?", e.Message)
	require.JSONEq(t, textElicit, string(e.RequestedSchema))
	require.Equal(t, "node-v2-hello-1", e.Meta["kortyx/sessionId"])
	p.Send(map[string]any{"op": "reply", "action": "accept", "content": map[string]any{"answer": "Ada"}})
	r = expectResult(t, p)
	require.Equal(t, "Hello, Ada!", r.Result.Content[0].Text)
	require.Equal(t, "completed", r.Result.Meta["kortyx/status"])
	require.Equal(t, e.Meta["kortyx/runId"], r.Result.Meta["kortyx/runId"])

	// support: the approval, answered approve; the refund runs once.
	nodeCall(p, "support", "Please refund order A-1001, it arrived broken.", nil, false)
	e = expectElicit(t, p)
	require.Equal(t, "Approve refund?", e.Message)
	require.JSONEq(t, approveElicit, string(e.RequestedSchema))
	p.Send(map[string]any{"op": "reply", "action": "accept", "content": map[string]any{"answer": "approve"}})
	r = expectResult(t, p)
	require.Equal(t, "Done: order A-1001 is refunded (R-5001, full amount).", r.Result.Content[0].Text)
	require.Equal(t, 1, s.set.Store.Refunds())

	// Manual mode: the input-required result itself; a changed state and, once the question
	// is answered, the same state again are refused.
	manual := func(inputResponses map[string]any, state string) {
		c := map[string]any{"op": "manual", "name": "hello", "arguments": map[string]any{"message": "hi"}, "meta": map[string]any{"kortyx/sessionId": "node-v2-hello-2"}}
		if state != "" {
			c["inputResponses"], c["requestState"] = inputResponses, state
		}
		p.Send(c)
	}
	manual(nil, "")
	var raw struct {
		Result callResult `json:"result"`
	}
	p.Expect("raw", nodeWait).Decode(t, &raw)
	key := raw.Result.key(t)
	state := raw.Result.RequestState
	require.NotEmpty(t, state)
	answers := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": "Grace"}}}

	manual(answers, state+"x")
	var ce nodeCallError
	p.Expect("callError", nodeWait).Decode(t, &ce)
	require.Equal(t, int64(-32602), ce.Code, ce.Message)
	require.Equal(t, contracts.CodeInvalidResume, ce.Data.Code)

	manual(answers, state)
	var done struct {
		Result callResult `json:"result"`
	}
	p.Expect("raw", nodeWait).Decode(t, &done)
	require.Empty(t, done.Result.InputRequests)
	require.Equal(t, "Hello, Grace!", done.Result.Content[0].Text)
	require.Equal(t, "completed", done.Result.Meta["kortyx/status"])

	manual(answers, state)
	p.Expect("callError", nodeWait).Decode(t, &ce)
	require.Equal(t, int64(-32602), ce.Code, ce.Message)
	require.Equal(t, contracts.CodeInvalidResume, ce.Data.Code)
	require.Contains(t, ce.Data.Message, "no longer open")
}

// The go-sdk v1.8.0 client probes with server/discover and settles on 2026-07-28 when the
// server serves it; it fulfils hello's input-required result with its elicitation handler.
func TestGoClientV2(t *testing.T) {
	s := startStateless(t, mcpserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var asked []string
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Ada"}}, nil
		}})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.urls[0]}, nil)
	require.NoError(t, err)
	defer func() { _ = cs.Close() }()
	require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
	require.Empty(t, cs.ID())
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, "Hello, Ada!", res.Content[0].(*mcp.TextContent).Text)
	require.Equal(t, "completed", res.Meta["kortyx/status"])
	require.Equal(t, []string{"What is your name?"}, asked)
}

// 2026-07-28 answers: Authorize sees "answer" with the state's session (and its refusal is a
// JSON-RPC error); cancel leaves the question open and a call naming the session asks it
// again; decline cancels the run, and denies an approval; an answer the session refuses gets
// the question again with the refusal.
func TestStatelessAnswers(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	refuse := false
	s := startStateless(t, mcpserver.Options{Authorize: func(r *http.Request, a sessions.Access) error {
		mu.Lock()
		defer mu.Unlock()
		if a.SessionID == "v2-auth-1" {
			seen = append(seen, string(a.Action)+" "+a.Workflow)
		}
		if refuse && a.Action == sessions.ActionAnswer {
			return contracts.Errorf(contracts.CodeForbidden, "Not yours.")
		}
		return nil
	}})
	url := s.urls[0]
	args := map[string]any{"message": "hi"}
	call := func(name string, args, meta map[string]any) callResult {
		t.Helper()
		p := map[string]any{"name": name, "arguments": args}
		if meta != nil {
			p["_meta"] = meta
		}
		return post2026(t, url, "tools/call", p, elicitCaps).call(t)
	}

	meta := map[string]any{"kortyx/sessionId": "v2-auth-1"}
	c := call("hello", args, meta)
	key := c.key(t)
	require.Equal(t, "name", key, "hello asks hooks.AskText(ctx, \"name\", ...)")
	mu.Lock()
	refuse = true
	mu.Unlock()
	r := post2026(t, url, "tools/call", answer("hello", args, meta, key, accepted(map[string]any{"answer": "Ada"}), c.RequestState), elicitCaps)
	require.NotNil(t, r.Error)
	require.Equal(t, int64(-32600), r.Error.Code)
	require.Equal(t, contracts.CodeForbidden, r.failure(t).Code)
	mu.Lock()
	refuse = false
	mu.Unlock()
	done := post2026(t, url, "tools/call", answer("hello", args, meta, key, accepted(map[string]any{"answer": "Ada"}), c.RequestState), elicitCaps).call(t)
	require.Equal(t, "Hello, Ada!", done.Content[0].Text)
	mu.Lock()
	require.Equal(t, []string{"read ", "start hello", "answer ", "answer "}, seen)
	mu.Unlock()

	// cancel: the question stays open; the session's next call asks it again; decline
	// cancels the run.
	meta = map[string]any{"kortyx/sessionId": "v2-decline-1"}
	c = call("hello", args, meta)
	w := post2026(t, url, "tools/call", answer("hello", args, meta, c.key(t), map[string]any{"action": "cancel"}, c.RequestState), elicitCaps).call(t)
	require.Equal(t, "complete", w.ResultType)
	require.Equal(t, "waiting", w.Meta["kortyx/status"])
	again := call("hello", args, meta)
	require.Equal(t, "input_required", again.ResultType)
	require.Equal(t, c.key(t), again.key(t))
	require.Equal(t, c.Meta["kortyx/runId"], again.Meta["kortyx/runId"])
	d := post2026(t, url, "tools/call", answer("hello", args, meta, again.key(t), map[string]any{"action": "decline"}, again.RequestState), elicitCaps).call(t)
	require.True(t, d.IsError)
	require.Equal(t, "cancelled", d.Meta["kortyx/status"])
	require.Equal(t, "The run was cancelled. (EXECUTION_CANCELLED)", d.Content[0].Text)

	// decline of an approval: the refund is denied, not made.
	sargs := map[string]any{"message": "Refund order A-1003 please."}
	c = call("support", sargs, nil)
	require.Equal(t, "Approve refund?", c.InputRequests[c.key(t)].Params.Message)
	d = post2026(t, url, "tools/call", answer("support", sargs, nil, c.key(t), map[string]any{"action": "decline"}, c.RequestState), elicitCaps).call(t)
	require.Equal(t, "I have not refunded order A-1003: Tool call denied by user.", d.Content[0].Text)
	require.Equal(t, 0, s.set.Store.Refunds())

	// An answer the session refuses (ship's nested schema is asked as one JSON text field).
	c = call("ship", args, nil)
	k := c.key(t)
	c = post2026(t, url, "tools/call", answer("ship", args, nil, k, accepted(map[string]any{"answer": `{"address":{"city":""}}`}), c.RequestState), elicitCaps).call(t)
	require.Equal(t, "input_required", c.ResultType)
	failure, _ := c.Meta["kortyx/failure"].(map[string]any)
	require.Equal(t, "INVALID_RESPONSE", failure["code"], "%v", c.Meta)
	c = post2026(t, url, "tools/call", answer("ship", args, nil, k, accepted(map[string]any{"answer": `{"address":{"city":"Oslo"}}`}), c.RequestState), elicitCaps).call(t)
	require.Equal(t, `Shipping to {"address":{"city":"Oslo"}}.`, c.Content[0].Text)
}

// With StatelessRevision, the older revisions are served as before on the same handler: a
// go-sdk client pinned to 2025-11-25 and the official TypeScript client 1.32.2 get a session
// and hello's question as an elicitation request.
func TestStatelessBesideOlder(t *testing.T) {
	s := startStateless(t, mcpserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Lin"}}, nil
		}})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.urls[0]}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer func() { _ = cs.Close() }()
	require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion)
	require.NotEmpty(t, cs.ID(), "a stateful session")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"}})
	require.NoError(t, err)
	require.Equal(t, "Hello, Lin!", res.Content[0].(*mcp.TextContent).Text)

	p := nodeclient.Start(t, "mcp.mjs", nil, s.urls[0])
	p.Expect("ready", nodeWait)
	nodeCall(p, "hello", "hi", nil, false)
	e := expectElicit(t, p)
	require.Equal(t, "What is your name?", e.Message)
	p.Send(map[string]any{"op": "reply", "action": "accept", "content": map[string]any{"answer": "Ada"}})
	r := expectResult(t, p)
	require.Equal(t, "Hello, Ada!", r.Result.Content[0].Text)
}
