// Package fakeserver is a fake OpenAI-compatible HTTP server for tests and key-less demos. It
// answers POST /v1/chat/completions — streamed (server-sent events ending in [DONE]) or not —
// by playing [fake.Turn] values, the same scripting as the in-process fake provider
// (providers/fake): a Responder written for one works unchanged with the other. Point the
// openai provider, or any OpenAI client, at [Server.URL].
//
//	srv := fakeserver.NewScript(
//		fake.Call("lookup_order", `{"orderId":"A-1"}`),
//		fake.Text("Your order ships tomorrow."),
//	)
//	defer srv.Close()
//	model := openai.New(openai.Options{BaseURL: srv.URL()}) // no key needed
//	resp, err := model.Generate(ctx, req, nil)
//	// srv.Requests() holds what the server received: messages, tools, stream flag, raw body.
//
// Or answer from the request, e.g. the canned echo for demos:
//
//	srv := fakeserver.New(fakeserver.Canned()) // "(fake model) You said: …"
//
// # What a turn becomes
//
// Streamed: a role chunk, one chunk per delta (Turn.Deltas, or Text split after spaces), the
// tool calls as fragments — the first fragment of a call carries its id, type, name and the start
// of its arguments, later fragments the rest, and the fragments of several calls interleave, so
// a client must assemble them by index — then a chunk with the finish reason, a usage chunk when
// the request sets stream_options.include_usage, and data: [DONE]. Not streamed: one
// chat.completion with usage. Tool call ids default to "call-<name>-<n>" (unless KeepIDs);
// usage defaults to {10 input, one output token per delta}, and Turn.NoUsage sends none (no
// usage chunk, no usage field); FinishReason is sent in OpenAI's
// words (tool-calls → tool_calls, content-filter → content_filter, other values verbatim).
// Turn.Warnings have no wire form and are not sent.
//
// Turn.Err (a *contracts.Error; any other error is a 500) picks a failure by code:
//
//	PROVIDER_REFUSAL           200 with the message's refusal set to the error message
//	PROVIDER_INVALID_RESPONSE  200 with a body (or a stream chunk) that is not JSON
//	PROVIDER_TRANSPORT_ERROR   the connection is closed without an answer
//	anything else              an OpenAI-style error {"error":{"message","type","code"}} with
//	                           Status (default 500; 400 for a non-retryable error of another
//	                           code); Details["type"] and Details["code"] set the body's type and
//	                           code (e.g. "insufficient_quota"), Details["retryAfterMs"] a
//	                           Retry-After header in whole seconds, rounded up
//
// With FailAfter > 0 a streamed answer sends that many deltas first and then fails mid-stream:
// the connection is cut, a chunk is not JSON, the refusal is streamed, or an error event
// (data: {"error":…}) ends the stream. Turn.Delay delays the answer, cut short when the client
// goes away. Turn.Hang streams Hang.After deltas (none when not streamed) and then holds the
// response until the client goes away, calling Hang.Cancelled when it has. A script that runs out answers 500 "script exhausted".
package fakeserver
