// Package fakegemini is a fake Gemini API server for tests and key-less demos. It answers
// POST /v1beta/models/{model}:streamGenerateContent?alt=sse (server-sent events) and
// POST /v1beta/models/{model}:generateContent (and the same methods under Vertex AI's paths,
// /v1beta1/publishers/google/models/… and
// /v1beta1/projects/{project}/locations/{location}/publishers/google/models/…) by playing
// [fake.Turn] values — the same scripting
// as the in-process fake provider (providers/fake) and the fake OpenAI server
// (providers/fakeserver): a Responder written for one works unchanged with the others. Point the
// google provider at [Server.URL] with any API key.
//
//	srv := fakegemini.NewScript(
//		fake.Call("lookup_order", `{"orderId":"A-1"}`),
//		fake.Text("Your order ships tomorrow."),
//	)
//	defer srv.Close()
//	model, err := google.New(ctx, google.Options{APIKey: "test", BaseURL: srv.URL()})
//	// srv.Requests() holds what the server received, as conformance.Request values.
//
// The server implements conformance.Server, so the provider conformance suite runs against it.
//
// # What a request becomes
//
// [Server.Requests] decodes each request into Kortyx's terms: the system instruction is one
// system message per part; "user" contents are user messages, their functionResponse parts tool
// messages ({"error": e} → IsError with e as Content; {"output": s} with a string s → Content s;
// any other output → StructuredContent, with its JSON text as Content); "model" contents are
// assistant messages (thought parts left out). A function call without an id is named
// "call-<name>-<n>" (n counting the function calls of the conversation up to this one, as the
// google provider names them), and a function response without an id
// answers the earliest unanswered call of its name. generationConfig becomes CallOptions
// (temperature, maxOutputTokens, stopSequences, responseMimeType/responseJsonSchema/responseSchema
// → ResponseFormat, thinkingConfig → Reasoning); thinkingBudget, includeThoughts, thinkingLevel,
// topK, topP, seed, presencePenalty, frequencyPenalty, safetySettings and cachedContent also go
// to ProviderOptions["google"] under those names. Raw is the body as received;
// [Server.Headers] has the headers (x-goog-api-key).
//
// # What a turn becomes
//
// Streamed: one event per delta (Turn.Deltas, or Text split after spaces), then one event with
// every function call as a functionCall part with its whole arguments (Gemini sends no
// argument fragments), then an event with the finish reason and usageMetadata. Not streamed:
// one response with all of it. Tool call ids default to "call-<name>-<n>" (fake.Turn.Normalize)
// and are sent as functionCall.id; with KeepIDs an empty id is sent as no id at all, as Gemini
// does. Usage defaults to {10 input, one output token per delta}; Input, Output, Reasoning,
// CacheRead and Total are sent as promptTokenCount, candidatesTokenCount, thoughtsTokenCount,
// cachedContentTokenCount and totalTokenCount; NoUsage sends no usageMetadata. FinishReason is
// sent in Gemini's words: stop and tool-calls → STOP, length → MAX_TOKENS, content-filter →
// SAFETY, other → OTHER, anything else verbatim. Turn.Warnings have no wire form and are not
// sent.
//
// Turn.Err (a *contracts.Error; any other error is a 500) picks a failure by code:
//
//	PROVIDER_REFUSAL           200 with finishReason SAFETY, the error's Message as
//	                           finishMessage, and a blocked safety rating of
//	                           Details["category"] (default HARM_CATEGORY_DANGEROUS_CONTENT);
//	                           with Details["blockReason"], a blocked prompt (promptFeedback)
//	PROVIDER_INVALID_RESPONSE  200 with a body (or an event) that is not JSON
//	PROVIDER_TRANSPORT_ERROR   the connection is closed without an answer
//	anything else              Google's error JSON {"error":{"code","message","status",
//	                           "details"}} with Status (default 500; 400 for a non-retryable
//	                           error of another code); status is Details["status"] or the one
//	                           Google uses for the HTTP status (429 RESOURCE_EXHAUSTED, 401
//	                           UNAUTHENTICATED, 403 PERMISSION_DENIED, 408 DEADLINE_EXCEEDED,
//	                           409 ABORTED, 503 UNAVAILABLE, …);
//	                           Details["retryAfterMs"] adds a google.rpc.RetryInfo detail whose
//	                           retryDelay is that many milliseconds ("1.5s")
//
// With FailAfter > 0 a streamed answer sends that many deltas first and then fails mid-stream:
// the connection is cut, an event is not JSON, the safety block is sent, or an error event
// (data: {"error":…}) ends the stream. Turn.Delay delays the answer, cut short when the client
// goes away. Turn.Hang streams Hang.After deltas (none when not streamed) and then holds the
// response until the client goes away, calling Hang.Cancelled when it has. A script that runs out answers 500 "script exhausted".
package fakegemini
