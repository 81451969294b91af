// Package google is a [providers.Provider] for Gemini models over the Gemini API (default) or
// Vertex AI, built on Google's Go SDK, google.golang.org/genai. Model references name it
// "google:<model>", e.g. "google:gemini-2.5-flash".
//
// # Configuration
//
// [FromEnv] reads the variables the SDK itself reads:
//
//	GEMINI_API_KEY            the API key (GOOGLE_API_KEY wins when both are set)
//	GOOGLE_GEMINI_BASE_URL    the API root without the version (default
//	                          https://generativelanguage.googleapis.com/)
//	GOOGLE_GENAI_USE_VERTEXAI "true" or "1": Vertex AI, with GOOGLE_CLOUD_PROJECT,
//	                          GOOGLE_CLOUD_LOCATION (or GOOGLE_CLOUD_REGION) and
//	                          GOOGLE_VERTEX_BASE_URL
//
// [New] fills the empty fields of its [Options] from the same variables (never the backend:
// pass FromEnv() to honour GOOGLE_GENAI_USE_VERTEXAI) and fails with PROVIDER_CONFIGURATION
// when the Gemini API has no key or Vertex AI no project or key. On Vertex AI a project (set or
// from GOOGLE_CLOUD_PROJECT) wins over a key from the environment, as in the SDK; without a key
// and without an [Options.HTTPClient], the SDK authenticates with Application Default
// Credentials. The SDK's HTTP retries are pinned to one attempt and its automatic stream
// continuation (which re-sends a request whose stream stopped early) is turned off: the activity retry policy is the only retry. Model
// options (per model reference) are not supported and come back as warnings.
//
// # What maps natively
//
// System messages become the system instruction (one part each; a system message after the
// start of the conversation is moved there, with a compatibility warning). Tools become function
// declarations with parametersJsonSchema. Assistant messages become "model" contents with
// functionCall parts; tool results become functionResponse parts (consecutive ones in one
// content) with the response {"output": result} — the structured result when there is one — or
// {"error": content} for a failed tool (IsError).
//
// Call options: Temperature (0 included), MaxOutputTokens, StopSequences, ResponseFormat (json →
// responseMimeType application/json; json-schema → the same plus responseJsonSchema; the
// schema's Name has no Gemini field and is not sent), Reasoning (MaxTokens → thinkingBudget,
// IncludeThoughts → includeThoughts, Effort minimal/low/medium/high → thinkingLevel). Gemini's
// own options come in [ProviderOptions] under the provider's id, ProviderOptions["google"] by
// default (the struct, a pointer to it, or the same fields as a JSON object, which is what
// crosses Temporal; read by [providers.DecodeOptions]): thinkingBudget (wins over
// Reasoning.MaxTokens; 0 turns thinking off), includeThoughts, thinkingLevel, safetySettings,
// topK, topP, seed, presencePenalty, frequencyPenalty, cachedContent. Options under other ids
// are other providers' and are not read. A value that is not an object, or a field of the wrong
// type, is a PROVIDER_CONFIGURATION error naming the setting, and nothing is sent.
//
// Returned as a [providers.Warning], never dropped silently: model options; unknown fields of
// providerOptions.google (unsupported, "providerOptions.google.<key>"); a reasoning effort or
// thinking level Gemini does not have; an unsupported response format; a negative
// maxOutputTokens; a system message after the start; an answer without usage metadata
// ([providers.NoUsageWarning]: its usage is recorded as zero).
//
// # Responses
//
// Text parts are passed to onDelta in order as they arrive; thought parts (with includeThoughts)
// never are, and are kept in ProviderMetadata["thoughts"]. Gemini sends each function call whole,
// in one part, so arguments never arrive in fragments. A function call without an id gets
// "call-<name>-<n>", n counting the tool calls of the conversation, this one included (unique
// across the tool loop, and the same when a pass is retried); such calls, and any part
// carrying a thought signature, make the response keep the model's parts as they came in
// [providers.Response.Continuation], and the assistant message that carries it back is
// sent with those parts (signatures included, no invented ids); its function responses then go
// without an id and Gemini matches them by name. Usage: promptTokenCount (+ tool-use prompt
// tokens) → Input, candidatesTokenCount → Output, thoughtsTokenCount → Reasoning,
// cachedContentTokenCount → CacheRead, totalTokenCount → Total. Finish reasons: STOP → stop (or
// tool-calls when there are function calls), MAX_TOKENS → length, others → other; Raw keeps
// Gemini's word. ProviderMetadata holds {"id", "model"} (responseId, modelVersion).
//
// # Errors
//
// Every failure is classified once, here, as a *contracts.Error:
//
//	PROVIDER_REFUSAL            finishReason SAFETY, RECITATION, PROHIBITED_CONTENT, BLOCKLIST,
//	                            SPII (and the IMAGE_ ones), or a prompt blocked by promptFeedback;
//	                            the message ends with the candidate's finishMessage when it has
//	                            one; Details: finishReason or blockReason, finishMessage,
//	                            category and categories (the blocked harm categories); not
//	                            retryable
//	PROVIDER_HTTP_ERROR         an error status; Status is set, Details["status"] is Google's
//	                            (RESOURCE_EXHAUSTED, …); retryable for 408, 409, 429 and 5xx,
//	                            never for 400, 401, 403, 404; the google.rpc.RetryInfo retryDelay
//	                            of the body, else Retry-After, becomes Details["retryAfterMs"]
//	PROVIDER_TRANSPORT_ERROR    connecting, resets, a stream cut short (retryable)
//	PROVIDER_INVALID_RESPONSE   a chunk that is not JSON, an answer without a finish reason
//	                            (retryable)
//	PROVIDER_CONFIGURATION      no key or project, a bad base URL, a request that cannot be
//	                            sent (an invalid schema, a tool result naming no tool, provider
//	                            options of the wrong type, a request the SDK refuses to send)
//
// The SDK drops a candidate's finishMessage on the Gemini API backend (it keeps it on Vertex
// AI), so the provider's HTTP client reads it from the response body as it passes to the SDK
// (per stream event, or from the whole body of an answer that is not streamed; a body or event
// over 8 MiB is not looked at).
//
// Cancelling the context returns the context's error itself. An error from onDelta is returned
// unchanged. The SDK logs a line ("Error unexpected EOF") when a stream is cut.
//
// Tests and key-less demos run this provider against providers/google/fakegemini, a fake Gemini
// API server scripted with fake.Turn values.
package google
