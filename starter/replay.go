package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/workflows"
)

// cmdReplay replays recent histories of a workflow against this build's workflows: the
// examples of KORTYX_EXAMPLES and the files of KORTYX_WORKFLOWS, as the worker program
// registers them, with the payload codec of the environment. One line per history; the exit
// status is 1 when any history does not replay.
func cmdReplay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	wf := fs.String("workflow", "", "a workflow type, an agent id or a workflow ID")
	limit := fs.Int("limit", 20, "replay at most this many executions, newest first")
	since := fs.Duration("since", 24*time.Hour, "only executions started within this long (0: any)")
	file := fs.String("history", "", "replay this history `file` (the JSON of temporal workflow show -o json) instead")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{msg: "replay takes no arguments besides its flags", fs: fs}
	}
	if (*wf == "") == (*file == "") {
		return usageError{msg: "replay needs --workflow or --history (one of them)", fs: fs}
	}
	cfg := config()
	reg, err := replayRegistry()
	if err != nil {
		return err
	}
	opts := kortyxtest.ReplayOptions{}
	if cfg.Codec != nil {
		opts.DataConverter = codec.DataConverter(cfg.Codec)
	}
	if *file != "" {
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		h, err := kortyxtest.ReadHistory(f)
		_ = f.Close()
		if err != nil {
			return err
		}
		if err := kortyxtest.Replay(reg, h, opts); err != nil {
			fmt.Printf("mismatch %s: %s\n", *file, oneLine(err))
			return errors.New("the history does not replay against this code")
		}
		fmt.Printf("ok %s\n", *file)
		return nil
	}
	c, err := app.Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	results, err := kortyxtest.ReplayRecent(ctx, c, reg, kortyxtest.RecentOptions{Workflow: *wf, Limit: *limit, Since: *since, Replay: opts})
	if err != nil {
		return err
	}
	if len(results) == 0 {
		fmt.Printf("no executions of %q found", *wf)
		if *since > 0 {
			fmt.Printf(" started within %s", *since)
		}
		fmt.Println()
		return nil
	}
	bad := 0
	for _, r := range results {
		if r.Err != nil {
			bad++
			fmt.Printf("mismatch %s %s %s (%s): %s\n", r.Type, r.WorkflowID, r.RunID, r.Status, oneLine(r.Err))
			continue
		}
		fmt.Printf("ok %s %s %s (%s)\n", r.Type, r.WorkflowID, r.RunID, r.Status)
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d histories do not replay against this code: do not deploy it as is (docs/versioning.md)", bad, len(results))
	}
	return nil
}

// replayRegistry is the registry the worker program builds (without its tools: a replay runs
// none, so tool names are not checked).
func replayRegistry() (*workflows.Registry, error) {
	chosen, err := examples.FromEnv() // KORTYX_EXAMPLES
	if err != nil {
		return nil, err
	}
	reg := workflows.NewRegistry()
	if err := chosen.Register(reg); err != nil {
		return nil, err
	}
	if dir := os.Getenv("KORTYX_WORKFLOWS"); dir != "" { // the worker's workflow files
		if err := reg.AddDir(dir); err != nil {
			return nil, fmt.Errorf("kortyx: loading workflows from KORTYX_WORKFLOWS=%s: %w", dir, err)
		}
	}
	return reg, nil
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
