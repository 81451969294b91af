package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
)

// cmdPayloads is "payloads gc": the garbage collection of the payload store (codec.Collect).
func cmdPayloads(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "gc" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Print(payloadsUsage)
			return nil
		}
		return usagef(nil, "payloads needs a subcommand: gc")
	}
	fs := flag.NewFlagSet("payloads gc", flag.ContinueOnError)
	grace := fs.Duration("grace", codec.DefaultGrace, "keep unreferenced objects stored less than this long ago")
	dry := fs.Bool("dry-run", false, "delete nothing; print what would be deleted")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError{msg: fmt.Sprintf("payloads gc takes no arguments (got %q)", pos), fs: fs}
	}
	if *grace <= 0 {
		return usageError{msg: "--grace must be a positive duration such as 1h", fs: fs}
	}
	cfg := config()
	if err := cfg.Err(); err != nil {
		return err
	}
	cd := cfg.Messages
	if cd == nil {
		cd = cfg.Codec
	}
	if !cd.HasStore() {
		return contracts.Errorf(contracts.CodeProviderConfiguration, "no payload store is configured: set KORTYX_PAYLOAD_STORE as the workers have it")
	}
	c, err := app.Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := codec.Collect(ctx, c, cd, codec.CollectOptions{Namespace: cfg.Namespace, Grace: *grace, DryRun: *dry})
	if err != nil {
		var ke *contracts.Error
		if errors.As(err, &ke) {
			return err
		}
		return fmt.Errorf("payloads gc: %w", err)
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(struct {
			DryRun bool `json:"dryRun"`
			codec.CollectResult
		}{*dry, res})
	}
	verb := "deleted"
	if *dry {
		verb = "would delete"
	}
	byHash := func(objs []codec.Object) []codec.Object {
		sort.Slice(objs, func(i, j int) bool { return objs[i].Hash < objs[j].Hash })
		return objs
	}
	for _, o := range byHash(res.Referenced) {
		fmt.Printf("kept %s (%d bytes): referenced\n", o.Hash, o.Size)
	}
	for _, o := range byHash(res.Fresh) {
		fmt.Printf("kept %s (%d bytes): stored %s ago, within --grace\n", o.Hash, o.Size, time.Since(o.ModTime).Round(time.Second))
	}
	var freed int64
	for _, o := range byHash(res.Deleted) {
		freed += o.Size
		fmt.Printf("%s %s (%d bytes)\n", verb, o.Hash, o.Size)
	}
	fmt.Printf("%d executions read; %d objects kept (%d referenced, %d within --grace); %d %s (%d bytes)\n",
		res.Executions, len(res.Referenced)+len(res.Fresh), len(res.Referenced), len(res.Fresh), len(res.Deleted), verb, freed)
	return nil
}

const payloadsUsage = `usage: starter payloads gc [--grace 1h] [--dry-run] [--json]

Deletes the objects of the payload store (KORTYX_PAYLOAD_STORE; in dev mode .kortyx/payloads)
that no workflow Temporal still keeps references (open runs and sessions, closed ones within
the namespace's retention), and that were stored longer ago than --grace.
`
