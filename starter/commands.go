package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/sseclient"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// parse parses flags that may come before or after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpRequest{fs: fs}
			}
			return nil, usageError{msg: fmt.Sprintf("%s: %v", fs.Name(), err), fs: fs}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// inputJSON turns a command-line input into JSON: JSON objects and arrays as is, anything else
// as a string.
func inputJSON(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}

func cmdRun(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON chunk per line")
	update := fs.Bool("update", false, "answer by update (validated) instead of signal")
	session := fs.String("session", "", "session id")
	ctxJSON := fs.String("context", "", "runtime context (JSON object)")
	detach := fs.Bool("detach", false, "print the run id and exit when the run waits for an answer")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(fs, "run needs <workflow> <input>")
	}
	cfg := config()
	c, err := app.Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	in := contracts.RunInput{Workflow: pos[0], Input: inputJSON(pos[1]), SessionID: *session}
	if *ctxJSON != "" {
		if !json.Valid([]byte(*ctxJSON)) {
			return usagef(fs, "--context must be a JSON object")
		}
		in.Context = json.RawMessage(*ctxJSON)
	}
	run, err := kortyx.StartRun(ctx, c, in, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
	if err != nil {
		return err
	}
	p := newPrinter(os.Stdout, *asJSON)
	p.note("run %s started (workflow %s)", run.GetID(), in.Workflow)
	var ans answerer = &promptAnswerer{in: os.Stdin, out: os.Stderr}
	if *detach {
		ans = nil
	}
	return follow(ctx, c, &sseclient.Client{BaseURL: streamURL(cfg)}, run.GetID(), ans, *update, p, true)
}

// follow streams a run response by response and answers its questions until it ends.
// answerLater says whether the run can still be answered after this program ends (with run,
// not with the demo, whose worker ends with it).
func follow(ctx context.Context, c client.Client, sc *sseclient.Client, runID string, ans answerer, update bool, p *printer, answerLater bool) error {
	var after int64
	errRejected := errors.New("rejected")
	for {
		var pending *contracts.Chunk
		err := sc.Follow(ctx, runID, after, stream.UntilResponse, func(id int64, ch contracts.Chunk) error {
			after = id
			p.chunk(ch)
			switch ch.Type {
			case contracts.ChunkInterrupt:
				cp := ch
				pending = &cp
			case contracts.ChunkResumeRejected:
				return errRejected
			}
			return nil
		})
		if err != nil && ctx.Err() != nil {
			return interrupted(runID, answerLater)
		}
		var opErr *net.OpError
		if errors.As(err, &opErr) {
			return fmt.Errorf("cannot reach the run stream at %s (is the worker running? set KORTYX_STREAM_URL to its HTTP API); the run %s goes on: follow it with starter status: %w", sc.BaseURL, runID, err)
		}
		if errors.Is(err, errRejected) {
			if pending, err = currentInterrupt(ctx, c, runID); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if pending == nil {
			return result(ctx, c, runID, p)
		}
		if ans == nil {
			p.note("run %s is waiting for an answer; answer it with: starter respond %s --text ... | --select ...", runID, runID)
			return nil
		}
		for {
			resp, err := ans.answer(ctx, *pending)
			if err != nil {
				return noAnswer(runID, answerLater, err)
			}
			if !update {
				if err := kortyx.Respond(ctx, c, runID, resp); err != nil {
					return err
				}
				break
			}
			if _, err := kortyx.RespondAndWait(ctx, c, runID, "", resp); err != nil {
				if contracts.CodeOf(err) == contracts.CodeInvalidResponse {
					p.note("answer rejected: %s", rejection(contracts.FailureOf(err)))
					continue
				}
				return err
			}
			break
		}
	}
}

// noAnswer is the error of a prompt that ended without an answer (Ctrl-C, end of input): what
// becomes of the run and, when it can still be answered, how.
func noAnswer(runID string, answerLater bool, err error) error {
	if !errors.Is(err, errNoAnswer) && !errors.Is(err, context.Canceled) {
		return err
	}
	why := "standard input ended"
	if errors.Is(err, context.Canceled) {
		why = "interrupted"
	}
	if answerLater {
		return fmt.Errorf("no answer given (%s); run %s keeps waiting: answer it with: starter respond %s --text ... | --select ... | --cancel", why, runID, runID)
	}
	return fmt.Errorf("no answer given (%s); the demo's worker stops with it, so run %s cannot go on: start the demo again", why, runID)
}

// interrupted is the error of a program interrupted while it followed the run's stream.
func interrupted(runID string, runGoesOn bool) error {
	if runGoesOn {
		return fmt.Errorf("interrupted; run %s goes on: see it with: starter status %s", runID, runID)
	}
	return fmt.Errorf("interrupted; the demo's worker stops with it, so run %s cannot go on: start the demo again", runID)
}

// currentInterrupt rebuilds the interrupt chunk of the run's pending question from the query.
func currentInterrupt(ctx context.Context, c client.Client, runID string) (*contracts.Chunk, error) {
	v, err := kortyx.Query(ctx, c, runID)
	if err != nil {
		return nil, err
	}
	if v.Pending == nil {
		return nil, nil
	}
	return &contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: v.Pending.RequestID, ResumeToken: v.Pending.Token,
		Node: v.Pending.Node, Input: protocol.RawJSON(v.Pending.Input)}, nil
}

// result waits for the run's outcome and reports it.
func result(ctx context.Context, c client.Client, runID string, p *printer) error {
	var res contracts.RunResult
	err := c.GetWorkflow(ctx, runID, "").Get(ctx, &res)
	switch contracts.CodeOf(err) {
	case "":
		p.note("run %s completed", runID)
		return nil
	case contracts.CodeExecutionCancelled:
		p.note("run %s cancelled", runID)
		return nil
	case contracts.CodeExecutionFailed:
		return err
	}
	// A Kortyx failure in its own words, not the SDK's "workflow execution error (type: …)".
	f := contracts.FailureOf(err)
	return &contracts.Error{Code: f.Code, Message: fmt.Sprintf("run %s failed: %s", runID, f.Message)}
}

func cmdRespond(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("respond", flag.ContinueOnError)
	text := fs.String("text", "", "text answer")
	sel := fs.String("select", "", "selected option ids, comma-separated")
	value := fs.String("value", "", "structured answer (JSON)")
	cancel := fs.Bool("cancel", false, "cancel the run instead of answering")
	update := fs.Bool("update", false, "answer by update: validated, with a typed error when rejected")
	token := fs.String("token", "", "resume token (default: read from the run)")
	requestID := fs.String("request-id", "", "request id (default: read from the run)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "respond needs <runID>")
	}
	resp := contracts.Response{Token: *token, RequestID: *requestID, Text: *text, Cancel: *cancel}
	if *sel != "" {
		resp.Selected = strings.Split(*sel, ",")
	}
	if *value != "" {
		if !json.Valid([]byte(*value)) {
			return usagef(fs, "--value must be JSON")
		}
		resp.Value = json.RawMessage(*value)
	}
	cfg := config()
	c, err := app.Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	if resp.Token == "" || resp.RequestID == "" {
		// Fill in only what was not given: a token on the command line is used as is (the run
		// checks it), never replaced by the one the run is waiting for.
		v, err := kortyx.Query(ctx, c, pos[0])
		if err != nil {
			return err
		}
		if v.Pending == nil {
			return contracts.Errorf(contracts.CodeInvalidResume, "run %s is not waiting for an answer (status %s)", pos[0], v.Status)
		}
		if resp.Token == "" {
			resp.Token = v.Pending.Token
		}
		if resp.RequestID == "" {
			resp.RequestID = v.Pending.RequestID
		}
	}
	if !*update {
		if err := kortyx.Respond(ctx, c, pos[0], resp); err != nil {
			return err
		}
		fmt.Printf("answer to %s sent by signal\n", resp.RequestID)
		return nil
	}
	res, err := kortyx.RespondAndWait(ctx, c, pos[0], "", resp)
	if err != nil {
		if contracts.CodeOf(err) == contracts.CodeInvalidResponse {
			// The message and the issues that add to it, each once.
			f := contracts.FailureOf(err)
			return &contracts.Error{Code: f.Code, Message: "answer rejected: " + rejection(f)}
		}
		return err
	}
	if res.Cancelled {
		fmt.Printf("run %s cancelled\n", pos[0])
		return nil
	}
	fmt.Printf("answer to %s accepted\n", res.RequestID)
	return nil
}

func cmdWaiting(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("waiting", flag.ContinueOnError)
	session := fs.String("session", "", "only runs of this session")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	cfg := config()
	c, err := app.Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	runs, err := kortyx.ListWaiting(ctx, c, *session)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(runs)
	}
	if len(runs) == 0 {
		fmt.Println("no runs are waiting for a human")
		return nil
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tWORKFLOW\tSESSION\tSTARTED")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.RunID, r.Workflow, r.SessionID, r.StartedAt.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

func cmdStatus(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "status needs <runID>")
	}
	cfg := config()
	c, err := app.Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := kortyx.Query(ctx, c, pos[0])
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func cmdCancel(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "cancel needs <runID>")
	}
	cfg := config()
	c, err := app.Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	// A closed run is not cancelled again: an already cancelled one says so (exit 0, the
	// asked-for state holds), one that ended otherwise is an error (exit 1) naming its status.
	desc, err := c.DescribeWorkflow(ctx, pos[0], "")
	if err != nil {
		return err
	}
	switch st := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus(); st {
	case enums.WORKFLOW_EXECUTION_STATUS_RUNNING:
	case enums.WORKFLOW_EXECUTION_STATUS_CANCELED:
		fmt.Printf("run %s is already cancelled\n", pos[0])
		return nil
	default:
		return contracts.Errorf(contracts.CodeInvalidRequest, "run %s has already ended (%s): there is nothing to cancel", pos[0], statusWord(st))
	}
	if err := c.CancelWorkflow(ctx, pos[0], ""); err != nil {
		return err
	}
	fmt.Printf("cancellation of run %s requested\n", pos[0])
	return nil
}

// statusWord is a closed run's Temporal status in words ("completed", "timed out").
func statusWord(st enums.WorkflowExecutionStatus) string {
	switch st {
	case enums.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed out"
	case enums.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "continued as new"
	}
	return strings.ToLower(st.String())
}
