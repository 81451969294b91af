package a2aserver_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
)

// The JSON of A2A 1.0's parts and messages as the JS client writes them back (ids normalized).
func text1(s string) string {
	b, _ := json.Marshal(s)
	return `{"text":` + string(b) + `}`
}

func message1(id, role, task, session string, parts ...string) string {
	return `{"messageId":"` + id + `","contextId":"` + session + `","taskId":"` + task + `","role":"ROLE_` + strings.ToUpper(role) +
		`","parts":[` + strings.Join(parts, ",") + `]}`
}

// helloAsks1 is the question part of hello's input-required message.
func helloAsks1(request string) string {
	return text1("What is your name?") + `,{"data":{"kind":"text","multiple":false,"question":"What is your name?","id":"name",
		"options":[],"requestId":"` + request + `","schema":{"type":"string","minLength":1}}}`
}

const progress1 = `{"artifactId":"data-progress","name":"progress","parts":[{"data":{"type":"structured-data","node":"n",
	"streamId":"progress","dataType":"progress","kind":"final","data":{"step":"working"}}}]}`

// The official JS client of A2A 1.x (@a2a-js/sdk 1.3.0) in its default mode against the A2A
// wire of an API-only process over Redis, once over each 1.0 binding it can choose: the card
// (the transport it picks and its version), a plain turn (send and stream), hello's question
// answered (input-required, then the answer; send and stream), get, the errors of a task that
// has ended and of an unknown one, cancel of a working task, and subscribe after the reader
// of a stream left and the API process restarted.
func TestOfficialClientV1(t *testing.T) {
	s := startStack(t)
	for _, binding := range []struct{ transport, version string }{{"JSONRPC", "1.0"}, {"HTTP+JSON", "1.0"}} {
		t.Run(binding.transport, func(t *testing.T) { officialClientV1(t, s, binding.transport) })
	}
}

func officialClientV1(t *testing.T, s *stack, transport string) {
	p := nodeclient.Start(t, "a2a-v1.mjs", map[string]string{"A2A_BASE": "http://" + s.addr, "A2A_TRANSPORT": transport})
	const wait = time.Minute
	m := norm{}
	call := func(cmd map[string]any, event, want string) nodeclient.Event {
		t.Helper()
		p.Send(cmd)
		e := p.Expect(event, wait)
		var v map[string]json.RawMessage
		e.Decode(t, &v)
		delete(v, "event")
		b, _ := json.Marshal(v)
		if want != "" {
			require.JSONEq(t, want, m.of(b), "%v", cmd)
		}
		return e
	}
	stream := func(cmd map[string]any, end string, want ...string) {
		t.Helper()
		p.Send(cmd)
		got, last := m.events(t, p)
		require.Equal(t, end, last)
		require.Len(t, got, len(want), "%v: %s", cmd, strings.Join(got, "\n"))
		for i := range want {
			require.JSONEq(t, want[i], got[i], "%v: event %d", cmd, i)
		}
	}
	// errorOf is the a2a-error event of an A2A error: its JSON-RPC code, or over HTTP+JSON its
	// HTTP status; the data (JSON-RPC) is the details, as the server sent them.
	errorOf := func(name, msg string, rpc, status int, reason, kortyx string) string {
		info := ""
		if reason != "" {
			info = `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + reason + `","domain":"a2a-protocol.org"},`
		}
		mj, _ := json.Marshal(msg)
		if transport == "JSONRPC" {
			return `{"name":"` + name + `","message":` + string(mj) + `,"code":` + strconv.Itoa(rpc) + `,"data":[` + info +
				`{"@type":"github.com/kortyx-go/kortyx/contracts.Failure","version":1,"code":"` + kortyx + `","category":"request","message":` + string(mj) + `,"retryable":false}]}`
		}
		return `{"name":"` + name + `","message":` + string(mj) + `,"status":` + strconv.Itoa(status) + `}`
	}

	e := call(map[string]any{"cmd": "card", "agent": "hello"}, "card", "")
	var card struct {
		Transport, Version string
	}
	e.Decode(t, &card)
	require.Equal(t, transport, card.Transport)
	require.Equal(t, "1.0", card.Version)

	// SendMessage: hello asks (TASK_STATE_INPUT_REQUIRED: the question as text and data), the
	// answer on the task completes it with the greeting; GetTask gives the same task.
	asks := message1("RUN1/3", "agent", "RUN1", "SESSION1", helloAsks1("HUMAN1"))
	prompt := message1("RUN1/prompt", "user", "RUN1", "SESSION1", text1("Hi"))
	greets := message1("RUN1/6", "agent", "RUN1", "SESSION1", text1("Hello, Ada!"))
	done := `{"result":{"id":"RUN1","contextId":"SESSION1","status":{"state":"TASK_STATE_COMPLETED","message":` + greets + `},
		"artifacts":[{"artifactId":"message-4","parts":[` + text1("Hello, Ada!") + `]}],
		"history":[` + prompt + `,` + asks + `,` + message1("RUN1/answer/HUMAN1", "user", "RUN1", "SESSION1", text1("Ada")) + `,` + greets + `]}}`
	e = call(map[string]any{"cmd": "send", "agent": "hello", "text": "Hi"}, "result",
		`{"result":{"id":"RUN1","contextId":"SESSION1","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":`+asks+`},"history":[`+prompt+`,`+asks+`]}}`)
	hello := id(t, e)
	call(map[string]any{"cmd": "send", "agent": "hello", "text": "Ada", "taskId": hello}, "result", done)
	call(map[string]any{"cmd": "get", "agent": "hello", "taskId": hello}, "result", done)

	// The errors of a task that has ended, and of one that does not exist.
	ended := "Task RUN1 is completed and cannot be continued: send the message without taskId to start a new task in the same context."
	call(map[string]any{"cmd": "send", "agent": "hello", "text": "Again", "taskId": hello}, "a2a-error",
		errorOf("UnsupportedOperationError", ended, -32004, 400, "UNSUPPORTED_OPERATION", "INVALID_REQUEST"))
	call(map[string]any{"cmd": "cancel", "agent": "hello", "taskId": hello}, "a2a-error",
		errorOf("TaskNotCancelableError", "Task RUN1 is already completed.", -32002, 409, "TASK_NOT_CANCELABLE", "INVALID_REQUEST"))
	call(map[string]any{"cmd": "subscribe", "agent": "hello", "taskId": hello}, "a2a-error",
		errorOf("UnsupportedOperationError", "Task RUN1 is completed: there is nothing to subscribe to; read it with GetTask.", -32004, 400, "UNSUPPORTED_OPERATION", "INVALID_REQUEST"))
	call(map[string]any{"cmd": "get", "agent": "hello", "taskId": "run-00000000-0000-0000-0000-000000000000"}, "a2a-error",
		errorOf("TaskNotFoundError", `Task "RUN2" not found.`, -32001, 404, "TASK_NOT_FOUND", "NOT_FOUND"))

	// SendStreamingMessage: the task, its input-required status, and the stream ends (no
	// "final" in 1.0); the answer's stream: working, the greeting as an artifact, completed.
	asks = message1("RUN3/3", "agent", "RUN3", "SESSION2", helloAsks1("HUMAN2"))
	stream(map[string]any{"cmd": "stream", "agent": "hello", "text": "Hi"}, "end",
		`{"task":{"id":"RUN3","contextId":"SESSION2","status":{"state":"TASK_STATE_WORKING"},"history":[`+message1("RUN3/prompt", "user", "RUN3", "SESSION2", text1("Hi"))+`]}}`,
		`{"statusUpdate":{"taskId":"RUN3","contextId":"SESSION2","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":`+asks+`}}}`)
	stream(map[string]any{"cmd": "stream", "agent": "hello", "text": "Ada", "taskId": key(m, "RUN3")}, "end",
		`{"statusUpdate":{"taskId":"RUN3","contextId":"SESSION2","status":{"state":"TASK_STATE_WORKING"}}}`,
		`{"artifactUpdate":{"taskId":"RUN3","contextId":"SESSION2","artifact":{"artifactId":"message-4","parts":[`+text1("Hello, Ada!")+`]}}}`,
		`{"statusUpdate":{"taskId":"RUN3","contextId":"SESSION2","status":{"state":"TASK_STATE_COMPLETED","message":`+
			message1("RUN3/6", "agent", "RUN3", "SESSION2", text1("Hello, Ada!"))+`}}}`)

	// A plain turn, streamed: one artifact per text segment, its deltas appended, the whole
	// text the completed status's message; and sent.
	delta := func(run, session, text string, appended bool) string {
		flag := ""
		if appended {
			flag = `"append":true,`
		}
		return `{"artifactUpdate":{"taskId":"` + run + `","contextId":"` + session + `",` + flag + `"artifact":{"artifactId":"text-UUID1/step-0","parts":[` + text + `]}}}`
	}
	stream(map[string]any{"cmd": "stream", "agent": "talk", "text": "Hi"}, "end",
		`{"task":{"id":"RUN4","contextId":"SESSION3","status":{"state":"TASK_STATE_WORKING"},"history":[`+message1("RUN4/prompt", "user", "RUN4", "SESSION3", text1("Hi"))+`]}}`,
		delta("RUN4", "SESSION3", text1("Hello"), false), delta("RUN4", "SESSION3", text1(", "), true), delta("RUN4", "SESSION3", text1("world"), true),
		`{"statusUpdate":{"taskId":"RUN4","contextId":"SESSION3","status":{"state":"TASK_STATE_COMPLETED","message":`+
			message1("RUN4/7", "agent", "RUN4", "SESSION3", text1("Hello, world"))+`}}}`)
	e = call(map[string]any{"cmd": "send", "agent": "talk", "text": "Hi"}, "result", "")
	var talked struct {
		Result struct {
			ID     string
			Status struct {
				State   string
				Message struct{ Parts []map[string]string }
			}
			Artifacts []struct{ Parts []map[string]string }
		}
	}
	e.Decode(t, &talked)
	require.Equal(t, "TASK_STATE_COMPLETED", talked.Result.Status.State)
	require.Equal(t, []map[string]string{{"text": "Hello, world"}}, talked.Result.Status.Message.Parts)
	require.Len(t, talked.Result.Artifacts, 1)
	require.Equal(t, []map[string]string{{"text": "Hello, world"}}, talked.Result.Artifacts[0].Parts)

	// CancelTask of a working task: its run is cancelled (a Temporal cancellation), the task
	// is TASK_STATE_CANCELED.
	started := func(run, session string) []string {
		return []string{`{"task":{"id":"` + run + `","contextId":"` + session + `","status":{"state":"TASK_STATE_WORKING"},"history":[` +
			message1(run+"/prompt", "user", run, session, text1("Go")) + `]}}`,
			`{"artifactUpdate":{"taskId":"` + run + `","contextId":"` + session + `","artifact":` + progress1 + `}}`}
	}
	stream(map[string]any{"cmd": "stream", "agent": "slow", "text": "Go", "leaveAfter": 2}, "left", started("RUN5", "SESSION4")...)
	task := key(m, "RUN5")
	cancelled := message1("RUN5/3", "agent", "RUN5", "SESSION4", text1("Execution cancelled."))
	call(map[string]any{"cmd": "cancel", "agent": "slow", "taskId": task}, "result",
		`{"result":{"id":"RUN5","contextId":"SESSION4","status":{"state":"TASK_STATE_CANCELED","message":`+cancelled+`},
		"artifacts":[`+progress1+`],"history":[`+message1("RUN5/prompt", "user", "RUN5", "SESSION4", text1("Go"))+`,`+cancelled+`]}}`)
	d, err := tenv.Client.DescribeWorkflow(context.Background(), task, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, d.RawResponse.GetWorkflowExecutionInfo().GetStatus())

	// SubscribeToTask after the reader of the stream left and the API process restarted (same
	// address, same Redis): the task as it is, then the rest of its response, live.
	stream(map[string]any{"cmd": "stream", "agent": "slow", "text": "Go", "leaveAfter": 2}, "left", started("RUN6", "SESSION5")...)
	task = key(m, "RUN6")
	s.stopAPI()
	s.startAPI()
	p.Send(map[string]any{"cmd": "subscribe", "agent": "slow", "taskId": task})
	first := p.Expect("event", wait)
	require.JSONEq(t, `{"task":{"id":"RUN6","contextId":"SESSION5","status":{"state":"TASK_STATE_WORKING"},"artifacts":[`+progress1+`],
		"history":[`+message1("RUN6/prompt", "user", "RUN6", "SESSION5", text1("Go"))+`]}}`, m.field(t, first, "a2a"))
	require.NoError(t, tenv.Client.SignalWorkflow(context.Background(), task, "", proceedSignal, nil))
	finished := message1("RUN6/4", "agent", "RUN6", "SESSION5", text1("Finished."))
	got, last := m.events(t, p)
	require.Equal(t, "end", last)
	require.Len(t, got, 2, strings.Join(got, "\n"))
	require.JSONEq(t, `{"artifactUpdate":{"taskId":"RUN6","contextId":"SESSION5","artifact":{"artifactId":"message-2","parts":[`+text1("Finished.")+`]}}}`, got[0])
	require.JSONEq(t, `{"statusUpdate":{"taskId":"RUN6","contextId":"SESSION5","status":{"state":"TASK_STATE_COMPLETED","message":`+finished+`}}}`, got[1])
	call(map[string]any{"cmd": "get", "agent": "slow", "taskId": task}, "result",
		`{"result":{"id":"RUN6","contextId":"SESSION5","status":{"state":"TASK_STATE_COMPLETED","message":`+finished+`},
		"artifacts":[`+progress1+`,{"artifactId":"message-2","parts":[`+text1("Finished.")+`]}],
		"history":[`+message1("RUN6/prompt", "user", "RUN6", "SESSION5", text1("Go"))+`,`+finished+`]}}`)

	p.Wait(wait)
}
