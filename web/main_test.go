package web_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/devserver"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// srv is the package's dev server and tc its client: the browser tests fail (never skip) when
// it cannot start.
var (
	srv *devserver.Server
	tc  client.Client
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin, err := devserver.Find(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "the web tests need the Temporal CLI (run `make tools`): %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err = devserver.Start(ctx, devserver.Options{BinaryPath: bin, UIPort: -1, SearchAttributes: contracts.SearchAttributes})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the dev server: %v\n", err)
		return 1
	}
	defer srv.Kill()
	quiet := log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	if tc, err = client.Dial(client.Options{HostPort: srv.Address(), Logger: quiet}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tc.Close()
	return m.Run()
}

func moduleRoot() (string, error) {
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
