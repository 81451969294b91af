package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/triage"
	"github.com/kortyx-go/kortyx/internal/app"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
)

const demoMessage = "I was charged twice on my last invoice"

// cmdDemo brings up everything in one process — the Temporal dev server (unless
// TEMPORAL_ADDRESS is set), a worker, the stream API — and runs the triage agent end to end.
func cmdDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	auto := fs.Bool("auto", false, "answer questions automatically (first option) and exit")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	message := demoMessage
	if len(pos) > 0 {
		message = strings.Join(pos, " ")
	}
	cfg := app.ConfigFromEnv()
	cfg.TaskQueue = "kortyx-demo"
	p := newPrinter(os.Stdout, false)
	if cfg.TemporalAddress == "" {
		// Free ports and a database of its own: never clash with a dev-mode worker.
		cfg.DevPort, cfg.DevUIPort, cfg.DevDB = 0, 0, "demo.db"
		p.note("starting the Temporal dev server")
		srv, err := app.StartDevServer(ctx, cfg, os.Stdout)
		if err != nil {
			return err
		}
		defer srv.Stop()
		cfg.TemporalAddress = srv.Address()
		p.note("Temporal dev server ready at %s (UI http://%s while the demo runs)", srv.Address(), srv.UIAddress())
	}
	c, err := app.Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	reg, err := app.Registry()
	if err != nil {
		return err
	}
	st, err := app.StartStack(ctx, c, cfg, reg, "127.0.0.1:0", nil)
	if err != nil {
		return err
	}
	defer st.Stop()
	input, _ := json.Marshal(message)
	run, err := workflows.StartRun(ctx, c, contracts.RunInput{Workflow: triage.WorkflowID, Input: input, SessionID: "demo"},
		workflows.StartOptions{TaskQueue: cfg.TaskQueue})
	if err != nil {
		return err
	}
	p.note("run %s started (workflow %s): %q", run.GetID(), triage.WorkflowID, message)
	var ans answerer = &promptAnswerer{in: bufio.NewReader(os.Stdin), out: os.Stdout}
	if *auto {
		ans = &autoAnswerer{out: os.Stdout}
	}
	if err := follow(ctx, c, &stream.Client{BaseURL: "http://" + st.HTTPAddr}, run.GetID(), ans, true, p); err != nil {
		return err
	}
	var res contracts.RunResult
	if err := run.Get(ctx, &res); err != nil {
		return err
	}
	fmt.Printf("· demo finished: ticket %v (%v)\n", res.State.Data["ticketId"], res.State.Data["topic"])
	return nil
}
