// Command ownworker is the "Your own worker" program of docs/running.md: a worker of your own
// with the support agent, the OpenAI-compatible provider, the run streams and the chat route
// behind an authorization check. It needs a Temporal server (the standard client configuration:
// TEMPORAL_ADDRESS, default localhost:7233, and the other TEMPORAL_* variables) whose namespace
// has the Kortyx search attributes.
package main

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/openai"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/sse"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/tools/mcp"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/worker"
)

func main() {
	// The standard client configuration: TEMPORAL_ADDRESS (default localhost:7233),
	// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE.
	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.Dial(opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ns := opts.Namespace
	if ns == "" {
		ns = "default"
	}
	// Fail at start, naming what is missing, rather than in every run's first workflow task.
	if err := kortyx.CheckSearchAttributes(context.Background(), c, ns); err != nil {
		log.Fatal(err)
	}

	reg := workflows.NewRegistry()
	if err := support.Register(reg); err != nil {
		log.Fatal(err) // INVALID_DEFINITION, listing every problem
	}
	myTools, err := support.Tools(support.NewStore()) // []tools.Tool
	if err != nil {
		log.Fatal(err)
	}
	toolSet, err := tools.NewSet(myTools...)
	if err != nil {
		log.Fatal(err) // bad, duplicate or reserved tool names
	}

	broker := stream.NewMemory(stream.MemoryOptions{})
	wo := worker.Options{}
	activities.WorkerOptions(&wo) // a stopped run's model request is aborted within 0.5 s
	w := worker.New(c, contracts.DefaultTaskQueue, wo)
	workflows.NewRunner(reg).Register(w) // workflows "kortyx.Run" and "kortyx.Session"
	acts, err := activities.New(activities.Config{
		Stream:          broker,                                         // local activity "kortyx.Publish"
		Providers:       providers.NewSet(openai.New(openai.Options{})), // OPENAI_API_KEY / OPENAI_BASE_URL
		DefaultProvider: "openai", DefaultModel: "gpt-4.1-mini",
		Tools: toolSet,     // activity "kortyx.Tool"
		MCP:   &mcp.Pool{}, // MCP servers named by runs
	})
	if err != nil {
		log.Fatal(err) // a missing broker or provider, named at start
	}
	acts.Register(w)

	svc, err := sessions.New(sessions.Options{Client: c, Broker: broker}) // every wire's session service
	if err != nil {
		log.Fatal(err)
	}
	chatRoute, err := chat.NewHandler(svc, chat.Options{
		Authorize: authorize}) // your authorization: docs/chat.md
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /v1/runs/{runID}/stream", &sse.Server{Broker: broker})
	mux.Handle("POST /api/chat", chatRoute)
	go func() { log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux)) }()

	if err := w.Run(worker.InterruptCh()); err != nil {
		log.Fatal(err)
	}
}

// authorize lets a request through only with the application's credentials; a real one also
// checks that the caller owns a.SessionID (docs/chat.md).
func authorize(r *http.Request, a sessions.Access) error {
	if r.Header.Get("Authorization") != "Bearer "+os.Getenv("APP_TOKEN") || os.Getenv("APP_TOKEN") == "" {
		return &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in first."}
	}
	return nil
}
