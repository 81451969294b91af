// Command starter is the command-line client of Kortyx runs.
//
//	starter demo [--auto] [--workflow W]      run an example agent end to end on an embedded server
//	starter run <workflow> <input> [--json]   start a run, stream it, answer its questions here
//	starter respond <runID> --text T | --select a,b | --value JSON | --cancel [--update]
//	starter waiting [--session S]             runs waiting for a human (no worker needed)
//	starter status <runID>                    state and pending question of a run
//	starter cancel <runID>                    cancel a run
//	starter payloads gc [--grace 1h] [--dry-run] garbage-collect the payload store
//	starter replay --workflow W [--limit N] [--since 24h] | --history file.json
//	                                          replay recent histories against this build (before a deploy)
//
// It reaches Temporal through the standard client configuration (TEMPORAL_ADDRESS, default
// 127.0.0.1:7233, the worker's dev server; TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*,
// TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE) and run streams at KORTYX_STREAM_URL (default
// http://127.0.0.1:8080, the worker's HTTP API). Its human output goes to stdout; diagnostics
// (the Temporal SDK's among them) go to stderr through log/slog (KORTYX_LOG_FORMAT,
// KORTYX_LOG_LEVEL, default warn).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
)

const usage = `usage: starter <command> [flags]

commands:
  demo [--auto] [--workflow support|triage|research] [--model M] [message]
                                 run an example agent end to end on an embedded Temporal dev server
  run <workflow> <input>         start a run and stream it; answer its questions at the prompt
      [--json] [--update] [--session S] [--context JSON] [--detach]
  respond <runID>                answer the run's pending question
      (--text T | --select id[,id] | --value JSON | --cancel) [--update] [--token T --request-id R]
  waiting [--session S] [--json] runs waiting for a human
  status <runID>                 the run's status, state and pending question
  cancel <runID>                 cancel a run
  payloads gc [--grace 1h] [--dry-run] [--json]
                                 delete payload-store objects no kept workflow references
  replay --workflow W            replay recent histories of W (a workflow type, agent id or workflow ID)
      [--limit N] [--since 24h]  against this build's workflows (KORTYX_EXAMPLES, KORTYX_WORKFLOWS);
      | --history file.json      exit 1 when one does not replay (run it before a deploy)

environment: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
TEMPORAL_TLS_*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE, KORTYX_TASK_QUEUE,
KORTYX_STREAM_URL (default http://127.0.0.1:8080), KORTYX_LOG_FORMAT, KORTYX_LOG_LEVEL,
KORTYX_EXAMPLES and KORTYX_WORKFLOWS (replay), KORTYX_CODEC_* and KORTYX_PAYLOAD_STORE (the payload codec)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first Ctrl-C the program winds down (servers stop, the stream closes); a
		// second one ends it at once, as without a handler.
		<-ctx.Done()
		stop()
	}()
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "demo":
		err = cmdDemo(ctx, args)
	case "run":
		err = cmdRun(ctx, args)
	case "respond":
		err = cmdRespond(ctx, args)
	case "waiting":
		err = cmdWaiting(ctx, args)
	case "status":
		err = cmdStatus(ctx, args)
	case "cancel":
		err = cmdCancel(ctx, args)
	case "payloads":
		err = cmdPayloads(ctx, args)
	case "replay":
		err = cmdReplay(ctx, args)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "starter: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		var he helpRequest
		if errors.As(err, &he) {
			fmt.Print(commandUsage(he.fs))
			return
		}
		var ue usageError
		if errors.As(err, &ue) {
			help := usage
			if ue.fs != nil {
				help = commandUsage(ue.fs)
			}
			fmt.Fprintf(os.Stderr, "starter: %v\n\n%s", err, help)
			os.Exit(2)
		}
		if ctx.Err() != nil {
			// Interrupted: say what was stopped (the error says what is left and what to do).
			fmt.Fprintf(os.Stderr, "starter: %v\n", err)
			os.Exit(130)
		}
		code := contracts.CodeOf(err)
		fmt.Fprintf(os.Stderr, "starter: %v", err)
		if code != contracts.CodeExecutionFailed {
			fmt.Fprintf(os.Stderr, " [%s]", code)
		}
		fmt.Fprintln(os.Stderr)
		os.Exit(1)
	}
}

// config is the environment's configuration with the CLI's diagnostics logger: slog on stderr
// (stdout is the CLI's output), warnings and errors unless KORTYX_LOG_LEVEL says otherwise.
func config() app.Config {
	cfg := app.ConfigFromEnv()
	if os.Getenv("KORTYX_LOG_LEVEL") == "" {
		cfg.LogLevel = slog.LevelWarn
	}
	cfg.Logger = newLogger(cfg, cfg.LogLevel)
	slog.SetDefault(cfg.Logger)
	return cfg
}

// newLogger is the CLI's diagnostics logger at level: KORTYX_LOG_FORMAT (text or json) on
// stderr (stdout is the CLI's output).
func newLogger(cfg app.Config, level slog.Level) *slog.Logger {
	o := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, o))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, o))
}

// streamURL is the base URL of the worker's HTTP API: KORTYX_STREAM_URL, else
// http://KORTYX_HTTP_ADDR, else http://127.0.0.1:8080.
func streamURL(cfg app.Config) string {
	if u := os.Getenv("KORTYX_STREAM_URL"); u != "" {
		return u
	}
	if cfg.HTTPAddr != "" {
		return "http://" + cfg.HTTPAddr
	}
	return "http://127.0.0.1:8080"
}

// usageError is a command line the program cannot run; fs, when set, is the command's flags
// (its usage is printed instead of the program's).
type usageError struct {
	msg string
	fs  *flag.FlagSet
}

func (e usageError) Error() string { return e.msg }

// usagef is a usage error of the command of fs (nil: of the program), whose usage is printed
// below it.
func usagef(fs *flag.FlagSet, format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...), fs: fs}
}

// helpRequest is --help or -h on a command: its usage goes to stdout and the program exits 0.
type helpRequest struct{ fs *flag.FlagSet }

func (helpRequest) Error() string { return "help requested" }

// synopses are the commands' argument lines, printed above their flags by --help.
var synopses = map[string]string{
	"payloads gc": "payloads gc [flags]\n  delete the payload store's objects that no workflow Temporal keeps references (stored longer ago than --grace)",
	"demo":        "demo [flags] [message]\n  run an example agent end to end on an embedded Temporal dev server (or TEMPORAL_ADDRESS)",
	"run":         "run <workflow> <input> [flags]\n  start a run and stream it; answer its questions at the prompt",
	"respond":     "respond <runID> (--text T | --select id[,id] | --value JSON | --cancel) [flags]\n  answer the run's pending question",
	"waiting":     "waiting [flags]\n  runs waiting for a human",
	"status":      "status <runID>\n  the run's status, state and pending question",
	"cancel":      "cancel <runID>\n  cancel a run",
	"replay":      "replay (--workflow W | --history file.json) [flags]\n  replay recent histories against this build's workflows (KORTYX_EXAMPLES, KORTYX_WORKFLOWS); exit 1 on a mismatch",
}

// commandUsage is a command's help: its synopsis and every flag with its default.
func commandUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: starter %s\n", synopses[fs.Name()])
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		b.WriteString("\nno flags\n")
		return b.String()
	}
	b.WriteString("\nflags:\n")
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	return b.String()
}
