package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/kortyx-go/kortyx/contracts"
)

// printer renders chunks for a terminal, or as one JSON object per line.
type printer struct {
	w      io.Writer
	json   bool
	inline string          // key of the text being written inline, "" when at line start
	shown  map[string]bool // text segments (OpID:SegmentID) whose deltas were printed
}

func newPrinter(w io.Writer, asJSON bool) *printer { return &printer{w: w, json: asJSON} }

// note prints a line of the program's own (to stderr in JSON mode).
func (p *printer) note(format string, args ...any) {
	if p.json {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return
	}
	p.endLine()
	fmt.Fprintf(p.w, "· "+format+"\n", args...)
}

func (p *printer) endLine() {
	if p.inline != "" {
		fmt.Fprintln(p.w)
		p.inline = ""
	}
}

func (p *printer) chunk(c contracts.Chunk) {
	if p.json {
		b, _ := json.Marshal(c)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	switch c.Type {
	case contracts.ChunkTextDelta:
		key := "text:" + c.OpID + ":" + c.SegmentID
		if c.Delta == "" {
			return
		}
		if p.shown == nil {
			p.shown = map[string]bool{}
		}
		p.shown[key] = true
		if p.inline != key {
			p.endLine()
			fmt.Fprintf(p.w, "%s: ", orDefault(c.Node, "assistant"))
			p.inline = key
		}
		fmt.Fprint(p.w, c.Delta)
	case contracts.ChunkTextStart, contracts.ChunkTextEnd:
	case contracts.ChunkTextInvalidated:
		// Only text that was printed needs discarding: a segment voided before any of its
		// deltas (or before this printer joined the stream) says nothing.
		key := "text:" + c.OpID + ":" + c.SegmentID
		if !p.shown[key] {
			return
		}
		delete(p.shown, key)
		p.endLine()
		fmt.Fprintf(p.w, "(the model pass failed midway and is retried: discard the text above)\n")
	case contracts.ChunkStatus: // a failed call is retried: say why the run waits
		p.endLine()
		fmt.Fprintf(p.w, "… %s\n", c.Message)
	case contracts.ChunkToolCallStart:
		p.endLine()
		fmt.Fprintf(p.w, "→ %s %s\n", c.Tool, c.Input)
	case contracts.ChunkToolCallResult:
		p.endLine()
		mark := "←"
		if c.IsError {
			mark = "✗"
		}
		fmt.Fprintf(p.w, "%s %s: %s\n", mark, c.Tool, c.Content)
	case contracts.ChunkToolCallError:
		p.endLine()
		fmt.Fprintf(p.w, "✗ %s: %s\n", c.Tool, c.Message)
	case contracts.ChunkStructuredData:
		key := "sd:" + c.StreamID + ":" + c.Path
		switch c.Kind {
		case contracts.StructuredTextDelta:
			if p.inline != key {
				p.endLine()
				fmt.Fprintf(p.w, "[%s] %s: ", c.DataType, c.Path)
				p.inline = key
			}
			fmt.Fprint(p.w, c.Delta)
		case contracts.StructuredSet:
			p.endLine()
			fmt.Fprintf(p.w, "[%s] %s = %s\n", c.DataType, c.Path, c.Value)
		case contracts.StructuredAppend:
			p.endLine()
			fmt.Fprintf(p.w, "[%s] %s += %s\n", c.DataType, c.Path, c.Items)
		default:
			p.endLine()
			fmt.Fprintf(p.w, "[%s] final %s\n", c.DataType, c.Data)
		}
	case contracts.ChunkMessage:
		p.endLine()
		fmt.Fprintf(p.w, "%s: %s\n", orDefault(c.Node, "message"), c.Content)
	case contracts.ChunkInterrupt:
		p.endLine()
		var in contracts.InterruptInput
		_ = json.Unmarshal(c.Input, &in)
		fmt.Fprintf(p.w, "? %s\n", questionOf(in))
		var meta struct {
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(in.Meta, &meta) == nil && len(meta.Input) > 0 {
			fmt.Fprintf(p.w, "  with %s\n", meta.Input)
		}
		for i, o := range in.Options {
			fmt.Fprintf(p.w, "  %d) %s — %s\n", i+1, o.ID, o.Label)
		}
	case contracts.ChunkResumeRejected:
		p.endLine()
		fmt.Fprintf(p.w, "! answer rejected: %s\n", c.Message)
	case contracts.ChunkTransition:
		p.endLine()
		fmt.Fprintf(p.w, "→ transition to %s\n", c.TransitionTo)
	case contracts.ChunkError:
		p.endLine()
		code := ""
		if c.Failure != nil {
			code = " [" + string(c.Failure.Code) + "]"
		}
		fmt.Fprintf(p.w, "! error: %s%s\n", c.Message, code)
	case contracts.ChunkCancelled:
		p.endLine()
		fmt.Fprintf(p.w, "! cancelled: %s\n", c.Reason)
	case contracts.ChunkDone:
		p.endLine()
	default:
		p.endLine()
		b, _ := json.Marshal(c)
		fmt.Fprintf(p.w, "%s\n", b)
	}
}

func questionOf(in contracts.InterruptInput) string {
	if in.Question != "" {
		return in.Question
	}
	if in.Kind == contracts.InterruptCustom {
		return "Answer (JSON) for " + string(in.Request)
	}
	return "Your answer"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// answerer produces the answer to an interrupt chunk.
type answerer interface {
	answer(ctx context.Context, c contracts.Chunk) (contracts.Response, error)
}

// errNoAnswer is the end of standard input at a prompt.
var errNoAnswer = errors.New("standard input ended before an answer")

// promptAnswerer asks at the terminal. One goroutine reads standard input line by line, so a
// prompt ends as soon as ctx does (Ctrl-C) even while the read blocks.
type promptAnswerer struct {
	in    io.Reader
	out   io.Writer
	once  sync.Once
	lines chan string // closed at the end of input
	err   error       // why lines was closed; read after it is
}

func (a *promptAnswerer) start() {
	a.once.Do(func() {
		a.lines = make(chan string)
		go func() {
			r := bufio.NewReader(a.in)
			for {
				line, err := r.ReadString('\n')
				if line != "" {
					a.lines <- line
				}
				if err != nil {
					a.err = err
					close(a.lines)
					return
				}
			}
		}()
	})
}

// readLine returns the next line of input, errNoAnswer at its end, or ctx's error.
func (a *promptAnswerer) readLine(ctx context.Context) (string, error) {
	a.start()
	select {
	case line, ok := <-a.lines:
		if !ok {
			if a.err == io.EOF {
				return "", errNoAnswer
			}
			return "", fmt.Errorf("%w: %v", errNoAnswer, a.err)
		}
		return line, nil
	case <-ctx.Done():
		fmt.Fprintln(a.out)
		return "", ctx.Err()
	}
}

func (a *promptAnswerer) answer(ctx context.Context, c contracts.Chunk) (contracts.Response, error) {
	var in contracts.InterruptInput
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return contracts.Response{}, err
	}
	resp := contracts.Response{Token: c.ResumeToken, RequestID: c.RequestID}
	for {
		switch in.Kind {
		case contracts.InterruptChoice:
			fmt.Fprint(a.out, "> choose 1-"+strconv.Itoa(len(in.Options))+" or an id (\"cancel\" cancels the run): ")
		case contracts.InterruptMultiChoice:
			fmt.Fprint(a.out, "> choose one or more, comma-separated (\"cancel\" cancels the run): ")
		case contracts.InterruptCustom:
			fmt.Fprint(a.out, "> JSON answer: ")
		default:
			fmt.Fprint(a.out, "> ")
		}
		line, err := a.readLine(ctx)
		if err != nil {
			return resp, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if line == "cancel" && in.Kind != contracts.InterruptText {
			resp.Cancel = true
			return resp, nil
		}
		switch in.Kind {
		case contracts.InterruptChoice, contracts.InterruptMultiChoice:
			for _, part := range strings.Split(line, ",") {
				part = strings.TrimSpace(part)
				if n, err := strconv.Atoi(part); err == nil && n >= 1 && n <= len(in.Options) {
					part = in.Options[n-1].ID
				}
				resp.Selected = append(resp.Selected, part)
			}
		case contracts.InterruptCustom:
			if !json.Valid([]byte(line)) {
				fmt.Fprintln(a.out, "  not valid JSON, try again")
				continue
			}
			resp.Value = json.RawMessage(line)
		default:
			resp.Text = line
		}
		return resp, nil
	}
}

// rejection is the text of a rejected answer, each part once: the message, then the issues
// that do not repeat it (a single issue is often the message itself), as [contracts.Error]
// renders them.
func rejection(f contracts.Failure) string {
	return (&contracts.Error{Code: f.Code, Message: f.Message, Issues: f.Issues}).Error()
}

// autoAnswerer answers without asking: the first option, or "yes" for text.
type autoAnswerer struct{ out io.Writer }

func (a *autoAnswerer) answer(ctx context.Context, c contracts.Chunk) (contracts.Response, error) {
	var in contracts.InterruptInput
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return contracts.Response{}, err
	}
	resp := contracts.Response{Token: c.ResumeToken, RequestID: c.RequestID}
	switch in.Kind {
	case contracts.InterruptChoice, contracts.InterruptMultiChoice:
		resp.Selected = []string{in.Options[0].ID}
		fmt.Fprintf(a.out, "> %s (auto)\n", in.Options[0].ID)
	case contracts.InterruptCustom:
		resp.Value = json.RawMessage(`{}`)
		fmt.Fprintf(a.out, "> {} (auto)\n")
	default:
		resp.Text = "yes"
		fmt.Fprintf(a.out, "> yes (auto)\n")
	}
	return resp, nil
}
