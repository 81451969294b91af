package app_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples/hello"
)

// A program of your own: your agents on a worker that app.Run builds from the environment
// (the dev server without TEMPORAL_ADDRESS, the providers of OPENAI_*, the development HTTP
// API). (Compiled, not run: it serves until Ctrl-C.)
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := app.Run(ctx, app.ConfigFromEnv(), app.Options{Register: hello.Register}); err != nil {
		log.Fatal(err)
	}
}
