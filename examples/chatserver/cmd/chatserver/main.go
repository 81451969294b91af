// Command chatserver serves the chatserver example: the chat, checkpoint and transcript routes
// behind bearer-token authentication, with a worker for the example agents of KORTYX_EXAMPLES
// (default: all of them) in the same process.
//
// It reaches Temporal through the standard client configuration (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE); with no address
// configured it starts the Temporal dev server (as the worker does). The stream broker is Redis
// with KORTYX_REDIS_URL, else in memory. Tokens come from KORTYX_CHAT_TOKENS
// ("token=user,token=user"); without it a random token for user "dev" is logged. The address is
// KORTYX_HTTP_ADDR (default 127.0.0.1:8080). Logs go to stdout through log/slog
// (KORTYX_LOG_FORMAT, KORTYX_LOG_LEVEL).
//
//	go run ./examples/chatserver/cmd/chatserver
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/app/allproviders"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/examples/chatserver"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/telemetry"
	"go.temporal.io/sdk/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tokens := map[string]string{}
	if v := os.Getenv("KORTYX_CHAT_TOKENS"); v != "" {
		var err error
		if tokens, err = chatserver.ParseTokens(v); err != nil {
			return err
		}
	} else {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		tokens[hex.EncodeToString(b)] = "dev"
	}
	chosen, err := examples.FromEnv() // KORTYX_EXAMPLES (default: all)
	if err != nil {
		return err
	}
	cfg := app.ConfigFromEnv()
	o := chosen.Options()                                                // their agents, tools and scripted fake model
	o.Providers, o.Telemetry = allproviders.FromEnv(), telemetry.FromEnv // OTEL_*
	// The chat server's routes instead of the development HTTP API, on the worker's client and
	// broker.
	o.HTTP = func(c client.Client, broker stream.Broker) (http.Handler, error) {
		return chatserver.New(chatserver.Options{Client: c, Broker: broker, TaskQueue: cfg.TaskQueue,
			DefaultWorkflow: chosen.DefaultWorkflow(), Tokens: tokens})
	}
	o.Started = func(r app.Running) {
		slog.Info("chatserver: serving", "addr", "http://"+r.HTTPAddr,
			"routes", "POST /api/chat, /api/chat/stop, /api/checkpoints; GET /api/transcript")
		if os.Getenv("KORTYX_CHAT_TOKENS") == "" {
			for token := range tokens {
				slog.Info("chatserver: no KORTYX_CHAT_TOKENS: a token for user dev", "user", "dev", "token", token)
			}
		}
	}
	return app.Run(ctx, cfg, o)
}
