// Package testenv starts what the packages with integration tests share in their TestMain: the
// module root, a real Temporal dev server (the Temporal CLI found by devserver.Find, no UI, the
// Kortyx search attributes registered) and a quiet client of it. It fails — the tests never
// skip — when the CLI is missing or the server cannot start.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/devserver"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// Env is a started dev server with its client.
type Env struct {
	Root   string            // the module root
	CLI    string            // the temporal CLI
	Server *devserver.Server // the dev server
	Client client.Client     // a client of Server that logs errors only
}

// Start starts the dev server of the tests of pkg (named in the errors, e.g. "the web tests").
// Close the Env when the tests are done.
func Start(pkg string) (*Env, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	cli, err := devserver.Find(root)
	if err != nil {
		return nil, fmt.Errorf("%s need the Temporal CLI (run `make tools`): %w", pkg, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{BinaryPath: cli, UIPort: -1, SearchAttributes: protocol.SearchAttributeNames()})
	if err != nil {
		return nil, fmt.Errorf("%s: starting the dev server: %w", pkg, err)
	}
	c, err := client.Dial(client.Options{HostPort: srv.Address(), Logger: QuietLogger()})
	if err != nil {
		_ = srv.Kill()
		return nil, fmt.Errorf("%s: dialing the dev server: %w", pkg, err)
	}
	return &Env{Root: root, CLI: cli, Server: srv, Client: c}, nil
}

// Close closes the client and kills the dev server.
func (e *Env) Close() {
	e.Client.Close()
	_ = e.Server.Kill() // the tests are over; its exit status says nothing
}

// ModuleRoot is the nearest directory above the working directory with a go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above the test directory")
		}
		dir = filepath.Dir(dir)
	}
}

// QuietLogger is a Temporal SDK logger that logs errors only, to stderr.
func QuietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}
