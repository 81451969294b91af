// Package providers is the model side of Kortyx: the [Provider] interface that model adapters
// implement, and [Set], the providers a worker knows by id. It runs in activities only — node
// code names a model as data ([ModelRef]) and never touches a provider.
//
// Adapters: providers/openai (any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, OpenRouter,
// Groq, …) and providers/fake (scripted, for tests and key-less demos). A worker hands its set
// to the activities, whose constructor checks that a default provider is one of them:
//
//	models := providers.NewSet(openai.New(openai.Options{}), fake.New(fake.Text("hi")))
//	acts, err := activities.New(activities.Config{Stream: broker, Providers: models, DefaultProvider: openai.ID})
//	if err != nil {
//		return err
//	}
//	acts.Register(w)
//
// An adapter of your own implements [Provider] (see the package example): one model pass per
// Generate call, text deltas to onDelta when it streams, and errors as *contracts.Error with a
// provider code and Retryable set, since the activity's retry policy is the only retry. It reads
// its own options from CallOptions.ProviderOptions under its id with [DecodeOptions] (unknown
// keys become warnings), returns [NoUsageWarning] when its server reported no usage, and passes
// providers/conformance, the suite of every provider, against a fake server of its wire.
package providers
