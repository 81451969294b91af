// Command worker runs a Kortyx worker with the example agents of KORTYX_EXAMPLES (default: all);
// app.Run does the rest, configured by the environment (docs/running.md). Without a Temporal
// address it runs in dev mode: a dev server of its own, the HTTP API and the chat page.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/telemetry"
)

func main() {
	apiOnly := flag.Bool("api-only", false, "serve the HTTP API (on KORTYX_HTTP_ADDR, default 127.0.0.1:8080) without polling tasks; needs a Temporal server (TEMPORAL_ADDRESS or a profile) and, to read the workers' streams, KORTYX_REDIS_URL")
	probe := flag.String("probe", "", "GET `URL` and exit with 0 if it answers 200, else 1 (a container healthcheck without curl)")
	poll := flag.String("poll", cmp.Or(os.Getenv("KORTYX_WORKER_POLL"), "all"), "what the worker polls: `all` (workflow and activity tasks), workflows (workflow tasks and the local publish activity) or activities (model, tool and MCP list activities); env KORTYX_WORKER_POLL")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: worker [--poll all|workflows|activities] | worker --api-only | worker --probe URL\n\n"+
			"Runs a Kortyx worker (polls the task queue; serves the HTTP API when KORTYX_HTTP_ADDR is set, or in dev mode).\n\nflags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "worker: unexpected argument %q\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*apiOnly, *poll, *probe); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, app.ErrUsage) { // a bad --poll
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(apiOnly bool, poll, probe string) error {
	if probe != "" {
		return app.Probe(context.Background(), probe, 5*time.Second)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	chosen, err := examples.FromEnv() // KORTYX_EXAMPLES
	if err != nil {
		return err
	}
	o := chosen.Options() // their agents, tools and scripted fake model
	o.APIOnly, o.Poll, o.Providers, o.Telemetry = apiOnly, poll, modelProviders(), telemetry.FromEnv
	return app.Run(ctx, app.ConfigFromEnv(), o)
}
