// Package app builds and runs a Kortyx program from its configuration: [Run] is the
// composition root of the worker program, the chat server example, the starter's demo and the
// test workers. [ConfigFromEnv] reads the configuration (the Temporal connection is the
// standard client configuration of go.temporal.io/sdk/contrib/envconfig; the KORTYX_*
// variables are in docs/running.md); [Options] add what the program brings: its agents, tools
// and models, its role (--api-only, --poll) and, when it serves its own routes, its HTTP
// handler. Run then connects to Temporal (or starts a dev server of its own in dev mode),
// builds the model providers (OpenAI-compatible from OPENAI_*, the others of
// [Options.Providers]; in dev mode or with KORTYX_FAKE_MODELS=1 the in-process fake model of
// package providers/fake for a provider without a key), the tools, the stream broker and the
// telemetry, registers the workflows and activities on a Temporal worker, serves the HTTP API
// and its health endpoints, and stops everything when ctx ends.
//
// It registers no agents: a program registers its own (the repository's worker registers the
// examples it is told to, see package examples). A program of your own on it:
//
//	err := app.Run(ctx, app.ConfigFromEnv(), app.Options{
//		Register: hello.Register, // your agents
//		Tools:    myTools,        // your tools
//	})
//
// The parts it composes are there too: [Dial] (a Temporal client of the configuration),
// [ServeHTTP] (the development HTTP API on a client and a broker of your own), [Probe] (a
// container healthcheck) and [CheckModel]. A worker composed without this package, the way
// samples-go writes one, is examples/ownworker.
package app
