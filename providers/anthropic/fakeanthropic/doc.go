// Package fakeanthropic is a fake Anthropic Messages API for tests and key-less demos. It
// answers POST /v1/messages — streamed (server-sent events) or not — by playing [fake.Turn]
// values, the same scripting as the in-process fake provider (providers/fake) and the fake
// OpenAI server (providers/fakeserver): a Responder written for one works unchanged with the
// others. Point the anthropic provider, or any Anthropic client, at [Server.URL].
//
//	srv := fakeanthropic.NewScript(
//		fake.Call("lookup_order", `{"orderId":"A-1"}`),
//		fake.Text("Your order ships tomorrow."),
//	)
//	defer srv.Close()
//	model := anthropic.New(anthropic.Options{BaseURL: srv.URL()}) // no key needed
//	resp, err := model.Generate(ctx, req, nil)
//	// srv.Requests() holds what the server received, in Kortyx's terms (conformance.Request);
//	// srv.Captured() adds the headers.
//
// [Server] implements conformance.Server, so the provider conformance suite runs against it.
//
// # What a turn becomes
//
// Streamed: message_start (with the usage's input counts), the [Server].Thinking blocks if any
// (thinking_delta pieces and a signature_delta each), a text block with one text_delta per
// delta (Turn.Deltas, or Text split after spaces), one tool_use block per call in order, its
// input in three input_json_delta fragments, then message_delta (stop_reason, usage) and
// message_stop. Not streamed: one message with the same content blocks. Tool call ids default
// to "call-<name>-<n>" (unless KeepIDs). Usage defaults to {10 input, one output token per
// delta}; it is sent as Anthropic counts it: input_tokens is Input less CacheRead and
// CacheWrite, which go to cache_read_input_tokens and cache_creation_input_tokens, Reasoning to
// output_tokens_details.thinking_tokens. Turn.NoUsage sends no usage objects at all.
// FinishReason is sent in Anthropic's words (stop → end_turn, length → max_tokens, tool-calls →
// tool_use; any other value verbatim, e.g. "stop_sequence").
//
// Turn.Err (a *contracts.Error; any other error is a 500) picks a failure by code:
//
//	PROVIDER_REFUSAL           stop_reason "refusal" with stop_details {explanation: the
//	                           message, category: Details["category"]}
//	PROVIDER_INVALID_RESPONSE  200 with a body (or a stream event) that is not JSON
//	PROVIDER_TRANSPORT_ERROR   the connection is closed without an answer
//	anything else              Anthropic's error {"type":"error","error":{"type","message"}}
//	                           with Status (default 500; 400 for a non-retryable error of
//	                           another code); the type follows the status (429
//	                           rate_limit_error, 529 overloaded_error, 401 authentication_error,
//	                           …) unless Details["type"] sets it; Details["retryAfterMs"] sets a
//	                           Retry-After header in whole seconds, rounded up
//
// With FailAfter > 0 a streamed answer sends that many text deltas first and then fails
// mid-stream: the connection is cut, an event is not JSON, the refusal ends the message, or an
// error event (event: error) ends the stream. Turn.Delay delays the answer, cut short when the
// client goes away. Turn.Hang streams Hang.After text deltas (none when not streamed) and then
// holds the response until the client goes away, calling Hang.Cancelled when it has. A script that runs out answers 500 api_error "script exhausted".
//
// Not honoured: Turn.Warnings (they have no wire form); a Usage.Total other than Input+Output
// (Anthropic sends no total); a FinishReason of content-filter (sent verbatim: Anthropic has no
// such stop reason).
package fakeanthropic
