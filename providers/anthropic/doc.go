// Package anthropic is a [providers.Provider] for Anthropic's Messages API, built on the
// official Go SDK, github.com/anthropics/anthropic-sdk-go/v2 (v2.16.0, API version 2026-10-21).
// Models are named "anthropic:<model>", e.g. "anthropic:claude-sonnet-4-5".
//
// # Configuration
//
// [FromEnv] reads the environment once:
//
//	ANTHROPIC_API_KEY   the API key (required by api.anthropic.com)
//	ANTHROPIC_BASE_URL  the API root, without /v1 (default https://api.anthropic.com)
//
// [New] reads nothing from the environment: [Options] say everything (APIKey, BaseURL,
// HTTPClient, DefaultMaxTokens). Nor does the SDK: its own environment defaults (credential
// chain, custom headers) are turned off. A missing key for Anthropic's own API fails every pass
// with a non-retryable PROVIDER_CONFIGURATION error naming ANTHROPIC_API_KEY; another base URL
// without a key gets no credentials. The SDK's retries are off: the activity retry policy is
// the only retry, so one pass is one HTTP request.
//
// # Requests
//
// System messages become the top-level system prompt, in order (wherever they stand in the
// conversation). Tool results become tool_result blocks of a user message (is_error set for a
// result with IsError), and consecutive messages of the same role are sent as one message, so
// that all results of a pass reach the model together. Tool definitions are sent with their
// input schema's exact bytes (none: an empty object schema).
//
// Call options, natively: MaxOutputTokens (max_tokens; the API requires one, so a pass without
// it sends max_tokens 4096 unless [Options.DefaultMaxTokens] says otherwise),
// StopSequences (stop_sequences), Reasoning.MaxTokens (enabled thinking with that
// budget_tokens), Reasoning.IncludeThoughts (thinking display "summarized"), Reasoning.Effort
// (output_config.effort: low, medium, high, xhigh or max), and ResponseFormat through the API's
// structured output (output_config.format, type json_schema): json-schema sends the schema's
// exact bytes, json the schema {"type":"object"}; the format's Name has no counterpart on this
// wire and is not sent (it names the format only). [ProviderOptions], read from
// CallOptions.ProviderOptions["anthropic"] (a ProviderOptions value or a JSON object of its
// keys, read by [providers.DecodeOptions]), add thinking ("adaptive", "enabled", "disabled") and thinkingBudget, prompt caching
// (cacheControl "ephemeral", "5m" or "1h" as the request's top-level cache_control;
// cacheSystem and cacheTools mark the system prompt's and the last tool's block), userId,
// serviceTier and disableParallelToolUse.
//
// What cannot be sent comes back as a [providers.Warning] in the response, never dropped
// silently: Temperature (API version 2026-10-21 has no temperature, top_p or top_k), a negative
// MaxOutputTokens, an effort Anthropic does not know, IncludeThoughts without thinking, a
// response format other than text, json and json-schema, model options (this provider has
// none; "streaming" is Kortyx's, read by hooks.Reason, and passes without one), unknown provider option keys, caching or parallel-tool options with nothing to apply
// to, and continuation data of another provider. A provider option of the wrong type or value
// is a PROVIDER_CONFIGURATION error (nothing is sent).
//
// # Responses
//
// Text deltas go to onDelta in order (empty ones are not passed on); tool_use input arrives as
// input_json_delta fragments and is assembled per content block index. Input that is not valid
// JSON is kept as a JSON string of the model's text (sent back as {} when the conversation
// continues: the API takes only objects). Usage: Input is the whole prompt (input_tokens +
// cache_creation_input_tokens + cache_read_input_tokens, as Anthropic bills it), CacheWrite and
// CacheRead the cache parts, Output output_tokens, Reasoning thinking_tokens, Total
// Input+Output. An answer without usage gets zero usage and [providers.NoUsageWarning].
// Finish reasons: end_turn and stop_sequence → stop, max_tokens and
// model_context_window_exceeded → length, tool_use → tool-calls, anything else → other (Raw
// keeps the API's word); refusal is the error PROVIDER_REFUSAL. ProviderMetadata holds "id",
// "model", "stopSequence" and "thinking" (the thinking text) when present.
//
// Thinking blocks (thinking with its signature, redacted_thinking) are kept in the response's
// Continuation; Kortyx's tool loop puts it on the assistant message of the next pass, and this
// provider sends the blocks back first in that message, as the API requires when thinking and
// tools are combined.
//
// # Errors
//
// Every failure is classified once, here, as a *contracts.Error:
//
//	PROVIDER_HTTP_ERROR         an error status; Status is set; retryable for 408, 409, 429,
//	                            5xx and 529 (overloaded), not for 400, 401, 403, 404, 413;
//	                            Retry-After (or retry-after-ms) becomes Details["retryAfterMs"];
//	                            Details["type"] is Anthropic's error type. An error event inside
//	                            a stream has Status 0 and is retryable for rate_limit_error,
//	                            overloaded_error, api_error and timeout_error
//	PROVIDER_TRANSPORT_ERROR    connecting, resets, a stream cut short or ended before
//	                            message_stop (retryable)
//	PROVIDER_INVALID_RESPONSE   a body or event that is not the API's JSON, an answer without a
//	                            stop_reason (retryable)
//	PROVIDER_REFUSAL            stop_reason refusal; the message holds the API's explanation,
//	                            Details["category"] its policy category (not retryable)
//	PROVIDER_CONFIGURATION      no key for Anthropic's API, a bad base URL or option, a request
//	                            the SDK will not send (not retryable)
//
// Cancelling the context returns the context's error itself (CodeOf gives EXECUTION_CANCELLED),
// so a cancelled pass is never retried. An error from onDelta is returned unchanged.
//
// # Example
//
//	model := anthropic.FromEnv() // export ANTHROPIC_API_KEY=...
//	set := providers.NewSet(model)
//	acts, err := activities.New(activities.Config{Stream: broker, Providers: set, DefaultProvider: anthropic.ID,
//		DefaultModel: "claude-sonnet-4-5"})
//
// Tests and key-less demos run this provider against providers/anthropic/fakeanthropic, a fake
// Messages endpoint scripted with fake.Turn values (see the package example); TestConformance
// runs the provider conformance suite (providers/conformance) against it.
package anthropic
