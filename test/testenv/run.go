package testenv

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
)

// Run runs app.Run(cfg, o) in the background for the test, the way the programs run it, and
// returns what o.Started saw (its logger, unless o.Logger: warnings on stderr) once the program runs (o.Started is its own). The program stops
// when ctx ends, or at the latest at the test's end, which waits for it; it fails the test
// when Run returns an error or the program has not started within a minute.
func Run(t testing.TB, ctx context.Context, cfg app.Config, o app.Options) app.Running {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, cancel := context.WithCancel(ctx)
	started := make(chan app.Running, 1)
	o.Started = func(r app.Running) { started <- r }
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, cfg, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app.Run: %v", err)
		}
	})
	select {
	case r := <-started:
		return r
	case err := <-done:
		done <- nil // reported here, not again at the cleanup
		t.Fatalf("app.Run returned before the program started: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("app.Run: the program did not start within a minute")
	}
	return app.Running{}
}
