// Package openai is a [providers.Provider] for any OpenAI-compatible chat-completions API —
// OpenAI itself, Ollama, vLLM, OpenRouter, Groq, LM Studio — built on
// github.com/sashabaranov/go-openai.
//
// # Configuration
//
// [New] reads the environment once:
//
//	OPENAI_API_KEY   the API key (sent as a bearer token; required only by api.openai.com)
//	OPENAI_BASE_URL  the API root, ending in /v1 (default https://api.openai.com/v1)
//
// [Options] override both. With a base URL other than OpenAI's and no key, no Authorization
// header is sent, which is what local servers expect. A missing key for OpenAI's own API fails
// every pass with a non-retryable PROVIDER_CONFIGURATION error naming OPENAI_API_KEY.
//
// A model reference may carry per-request options (plain data, set by node code):
//
//	baseURL  string: send this pass to another OpenAI-compatible server
//	apiKey   string: the key of this pass
//
// The provider's own key and organization are sent only to the provider's own server (same
// scheme and host): a pass that sets baseURL to another server sends only the apiKey it sets
// itself. Other model options are reported as warnings.
//
// # Call options
//
// Temperature, MaxOutputTokens (max_completion_tokens), StopSequences, Reasoning.Effort
// (reasoning_effort) and ResponseFormat (text, json → json_object, json-schema → json_schema
// with strict true and the name "response" unless set) are sent as such. Provider options are
// read from ProviderOptions under the provider's id ("openai" unless [Options.ID] sets another)
// into [ProviderOptions] by [providers.DecodeOptions]: topP, seed, user, presencePenalty,
// frequencyPenalty, parallelToolCalls, serviceTier, store and metadata map to the request
// fields of the same meaning, e.g. ProviderOptions{"openai": {"seed": 7}}. The same keys at the
// top level of ProviderOptions (how earlier versions read them) still apply, with a deprecated
// warning. What cannot be sent comes back as a [providers.Warning] in the response, never
// silently dropped: a temperature (or topP) of 0, which go-openai omits from the request (the
// server's default then applies); Reasoning.MaxTokens and Reasoning.IncludeThoughts, which chat
// completions do not have; unknown keys under the provider's id. A provider option of the wrong
// type is a PROVIDER_CONFIGURATION error.
//
// # Responses
//
// Text, tool calls, usage (reasoning and cached-prompt tokens included), the finish reason
// (stop, length, content_filter → content-filter, tool_calls and function_call → tool-calls,
// anything else → other; Raw keeps the server's word) and ProviderMetadata {"id", "model",
// "systemFingerprint"}. A server that reports no usage (a stream without a usage chunk
// although stream_options.include_usage is sent, or an answer without usage) gives zero usage
// and [providers.NoUsageWarning]. Tool call arguments are JSON; arguments that are not valid JSON are
// kept as a JSON string holding the model's text, so the caller can report them to the model
// (such a string is sent back verbatim as the arguments text when the conversation continues).
// Streamed tool calls are assembled from their fragments by index.
//
// # Errors
//
// Every failure is classified once, here, as a *contracts.Error; the provider never retries by
// itself (the activity retry policy does):
//
//	PROVIDER_HTTP_ERROR         an error status; Status is set; retryable for 408, 409, 429 and
//	                            5xx, but never for 401/403 or an exhausted quota
//	                            (insufficient_quota, billing_hard_limit_reached); Retry-After and
//	                            retry-after-ms become Details["retryAfterMs"]
//	PROVIDER_TRANSPORT_ERROR    connecting, TLS, resets, a stream cut short, timeouts (retryable)
//	PROVIDER_INVALID_RESPONSE   no choices, a body that is not JSON, a stream without a finish
//	                            reason (retryable)
//	PROVIDER_REFUSAL            the model refused; the message holds its words (not retryable)
//	PROVIDER_CONFIGURATION      no key for OpenAI, a bad base URL or option, a request the client
//	                            will not send (not retryable)
//
// Cancelling the context returns the context's error itself (CodeOf gives EXECUTION_CANCELLED),
// so a cancelled pass is never retried. An error from onDelta is returned unchanged.
//
// # Example
//
//	// OpenAI: export OPENAI_API_KEY=sk-...
//	// Ollama: export OPENAI_BASE_URL=http://localhost:11434/v1 (no key needed)
//	model := openai.New(openai.Options{})
//	set := providers.NewSet(model)
//	acts, err := activities.New(activities.Config{Stream: broker, Providers: set, DefaultProvider: openai.ID})
//	if err != nil {
//		log.Fatal(err)
//	}
//
//	// Or call it directly:
//	resp, err := model.Generate(ctx, providers.Request{
//		Model:    "gpt-4.1-mini", // "llama3.2" on Ollama
//		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Say hi"}},
//	}, func(delta string) error { fmt.Print(delta); return nil })
//	if err != nil {
//		log.Fatal(contracts.CodeOf(err), ": ", err)
//	}
//	fmt.Println(resp.Usage.Total, resp.FinishReason.Unified)
//
// Several servers at once: register providers under their own ids, e.g.
// openai.New(openai.Options{ID: "ollama", BaseURL: "http://localhost:11434/v1"}), and name
// models "ollama:llama3.2".
//
// Tests and key-less demos can run this provider against providers/fakeserver, a fake
// OpenAI-compatible server scripted with fake.Turn values.
package openai
