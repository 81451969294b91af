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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/app/allproviders"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/examples/chatserver"
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
	cfg := app.ConfigFromEnv()
	if err := cfg.Err(); err != nil {
		return err
	}
	logger := cfg.NewLogger(os.Stdout)
	slog.SetDefault(logger)
	cfg.Logger = logger
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
	devMode := cfg.DevMode() // before Connect fills in the dev server's address
	t, err := app.Connect(ctx, &cfg, os.Stdout)
	if err != nil {
		return err
	}
	defer t.Close()
	c := t.Client
	chosen, err := examples.FromEnv() // KORTYX_EXAMPLES (default: all)
	if err != nil {
		return err
	}
	opts, err := chosen.Backend()
	if err != nil {
		return err
	}
	opts.Providers = allproviders.FromEnv()
	opts.FakeServers = devMode || cfg.FakeModels // no key outside dev mode: refuse to start
	backend, err := app.NewBackend(ctx, opts)
	if err != nil {
		return err
	}
	defer backend.Close()
	reg, err := app.Registry(backend, chosen.Register)
	if err != nil {
		return err
	}
	broker, closeBroker, err := app.OpenBroker(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = closeBroker() }()
	acts, err := backend.Activities(broker)
	if err != nil {
		return err
	}
	w := app.NewWorker(c, cfg, reg, acts)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	server, err := chatserver.New(chatserver.Options{Client: c, Broker: broker, TaskQueue: cfg.TaskQueue,
		DefaultWorkflow: chosen.DefaultWorkflow(), Tokens: tokens})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr())
	if err != nil {
		return fmt.Errorf("chatserver: cannot listen on %s (set KORTYX_HTTP_ADDR): %w", cfg.ListenAddr(), err)
	}
	hs := &http.Server{Handler: server, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	logger.Info("chatserver: serving", "addr", "http://"+ln.Addr().String(),
		"routes", "POST /api/chat, /api/chat/stop, /api/checkpoints; GET /api/transcript")
	if os.Getenv("KORTYX_CHAT_TOKENS") == "" {
		for token := range tokens {
			logger.Info("chatserver: no KORTYX_CHAT_TOKENS: a token for user dev", "user", "dev", "token", token)
		}
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
