package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// TestMain runs the program itself when the test binary is started with STARTER_MAIN=1, so the
// tests below run the real main (flags, exit codes) without building it.
func TestMain(m *testing.M) {
	if os.Getenv("STARTER_MAIN") == "1" {
		os.Args = append([]string{"starter"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runMain runs main with args and returns its stdout, stderr and exit code.
func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runMainEnv(t, nil, args...)
}

// runMainEnv is runMain with env added to the environment.
func runMainEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "STARTER_MAIN=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errOut.String(), code
}

func TestHelpOnEveryCommand(t *testing.T) {
	flags := map[string][]string{
		"demo":    {"-auto", "-model string", "-workflow string"},
		"run":     {"-context string", "-detach", "-json", "-session string", "-update"},
		"respond": {"-cancel", "-request-id string", "-select string", "-text string", "-token string", "-update", "-value string"},
		"waiting": {"-json", "-session string"},
		"status":  nil,
		"cancel":  nil,
		"replay":  {"-history file", "-limit int", "-since duration", "-workflow string"},
	}
	for cmd, want := range flags {
		for _, h := range []string{"--help", "-h"} {
			out, errOut, code := runMain(t, cmd, h)
			require.Equal(t, 0, code, "%s %s: stderr %s", cmd, h, errOut)
			require.Empty(t, errOut, "%s %s", cmd, h)
			require.True(t, strings.HasPrefix(out, "usage: starter "+cmd+" "), "%s %s:\n%s", cmd, h, out)
			var got []string
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "  -") {
					got = append(got, strings.TrimSpace(line))
				}
			}
			require.Equal(t, want, got, "%s %s lists its flags:\n%s", cmd, h, out)
			if want == nil {
				require.Contains(t, out, "\nno flags\n")
			}
		}
	}
	// Help after positional arguments too, and the program's own help.
	out, _, code := runMain(t, "run", "triage", "hi", "--help")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "usage: starter run <workflow> <input> [flags]\n"), out)
	for _, h := range []string{"help", "-h", "--help"} {
		out, _, code = runMain(t, h)
		require.Equal(t, 0, code)
		require.Equal(t, usage, out)
	}
}

func TestUnknownFlagPrintsTheCommandsUsage(t *testing.T) {
	out, errOut, code := runMain(t, "run", "--bogus")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.True(t, strings.HasPrefix(errOut, "starter: run: flag provided but not defined: -bogus\n\nusage: starter run <workflow> <input> [flags]\n"), errOut)
	require.Contains(t, errOut, "  -detach\n")
}

// A command without its arguments prints its own usage, not the program's.
func TestMissingArgumentsPrintTheCommandsUsage(t *testing.T) {
	for cmd, msg := range map[string]string{
		"run":     "run needs <workflow> <input>",
		"respond": "respond needs <runID>",
		"status":  "status needs <runID>",
		"cancel":  "cancel needs <runID>",
	} {
		out, errOut, code := runMain(t, cmd)
		require.Equal(t, 2, code, cmd)
		require.Empty(t, out, cmd)
		require.True(t, strings.HasPrefix(errOut, "starter: "+msg+"\n\nusage: starter "+cmd+" "), "%s:\n%s", cmd, errOut)
		require.NotContains(t, errOut, "commands:", "%s: not the program's usage", cmd)
	}
}

// demo --model (and KORTYX_MODEL) are checked before anything starts, and the error lists the
// providers.
func TestDemoChecksTheModelFirst(t *testing.T) {
	env := []string{"TEMPORAL_ADDRESS=", "KORTYX_MODEL=", "TEMPORAL_CLI_PATH=" + filepath.Join(t.TempDir(), "no-temporal")}
	out, errOut, code := runMainEnv(t, env, "demo", "--model", "bogus:x")
	require.Equal(t, 2, code, errOut)
	require.Empty(t, out, "no server started")
	require.True(t, strings.HasPrefix(errOut, `starter: demo --model: model "bogus:x": there is no provider "bogus"; the providers are openai, google, anthropic, fake (e.g. anthropic:claude-sonnet-4-5)`+"\n\nusage: starter demo "), errOut)
	_, errOut, code = runMainEnv(t, env, "demo", "--model", "anthropic:")
	require.Equal(t, 2, code, errOut)
	require.True(t, strings.HasPrefix(errOut, `starter: demo --model: model "anthropic:" names no model; write provider:model (e.g. anthropic:claude-sonnet-4-5)`+"\n\n"), errOut)
	out, errOut, code = runMainEnv(t, append(env, "KORTYX_MODEL=bogus:y"), "demo")
	require.Equal(t, 1, code, errOut)
	require.Empty(t, out)
	require.Equal(t, `starter: KORTYX_MODEL: model "bogus:y": there is no provider "bogus"; the providers are openai, google, anthropic, fake (e.g. anthropic:claude-sonnet-4-5) [PROVIDER_CONFIGURATION]`+"\n", errOut)
}

func TestPromptEndsWhenContextIsCancelled(t *testing.T) {
	in, w := io.Pipe() // never written: the read blocks, as at a terminal
	defer w.Close()
	var out bytes.Buffer
	a := &promptAnswerer{in: in, out: &out}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.answer(ctx, contracts.Chunk{Type: contracts.ChunkInterrupt, Input: []byte(`{"kind":"text","question":"Name?"}`)})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the prompt did not end after its context was cancelled")
	}
	require.Equal(t, "> \n", out.String())
}

func TestPromptReadsLinesAndEnds(t *testing.T) {
	var out bytes.Buffer
	a := &promptAnswerer{in: strings.NewReader("\nnot json\n{\"a\":1}\n"), out: &out}
	resp, err := a.answer(context.Background(), contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: "r1", ResumeToken: "tok",
		Input: []byte(`{"kind":"custom","request":"x"}`)})
	require.NoError(t, err)
	require.Equal(t, contracts.Response{Token: "tok", RequestID: "r1", Value: []byte(`{"a":1}`)}, resp)
	require.Equal(t, "> JSON answer: > JSON answer:   not valid JSON, try again\n> JSON answer: ", out.String())
	_, err = a.answer(context.Background(), contracts.Chunk{Type: contracts.ChunkInterrupt, Input: []byte(`{"kind":"text"}`)})
	require.ErrorIs(t, err, errNoAnswer)
}

func TestNoAnswerSuggestsOnlyWhatWorks(t *testing.T) {
	demo := noAnswer("run-1", false, context.Canceled).Error()
	require.Equal(t, "no answer given (interrupted); the demo's worker stops with it, so run run-1 cannot go on: start the demo again", demo)
	run := noAnswer("run-1", true, errNoAnswer).Error()
	require.Equal(t, "no answer given (standard input ended); run run-1 keeps waiting: answer it with: starter respond run-1 --text ... | --select ... | --cancel", run)
	require.Equal(t, "interrupted; run run-1 goes on: see it with: starter status run-1", interrupted("run-1", true).Error())
	require.Equal(t, "interrupted; the demo's worker stops with it, so run run-1 cannot go on: start the demo again", interrupted("run-1", false).Error())
	other := errors.New("boom")
	require.Equal(t, other, noAnswer("run-1", true, other))
}

func TestRejectionPrintsEachPartOnce(t *testing.T) {
	msg := `Unknown option "xyz": choose one of "approve", "deny".`
	// The update's failure as the run reports it: one issue, the message itself.
	f := contracts.Failure{Code: contracts.CodeInvalidResponse, Message: msg, Issues: []contracts.Issue{{Message: msg}}}
	require.Equal(t, msg, rejection(f))
	f = contracts.Failure{Code: contracts.CodeInvalidResponse, Message: "The answer does not match the question's response schema.",
		Issues: []contracts.Issue{{Path: []any{"amount"}, Code: "type", Message: "want number"}}}
	require.Equal(t, "The answer does not match the question's response schema. (amount: want number)", rejection(f))
}

// A retried pass says "discard the text above" only for text that was printed: a segment voided
// before any of its deltas were shown (e.g. a printer that joined the stream later) says nothing.
func TestInvalidatedTextIsMentionedOnlyWhenShown(t *testing.T) {
	var b bytes.Buffer
	p := newPrinter(&b, false)
	for _, c := range []contracts.Chunk{
		{Type: contracts.ChunkTextInvalidated, OpID: "op", SegmentID: "step-0"}, // nothing shown for it
		{Type: contracts.ChunkTextStart, Node: "chat", OpID: "op", SegmentID: "step-0~2"},
		{Type: contracts.ChunkTextDelta, Node: "chat", OpID: "op", SegmentID: "step-0~2", Delta: "Hello "},
		{Type: contracts.ChunkTextDelta, Node: "chat", OpID: "op", SegmentID: "step-0~2", Delta: "bra"},
		{Type: contracts.ChunkTextInvalidated, OpID: "op", SegmentID: "step-0~2"},
		{Type: contracts.ChunkTextInvalidated, OpID: "op", SegmentID: "step-0~2"}, // said once
		{Type: contracts.ChunkTextStart, Node: "chat", OpID: "op", SegmentID: "step-0~3"},
		{Type: contracts.ChunkTextDelta, Node: "chat", OpID: "op", SegmentID: "step-0~3", Delta: "Hello brave world"},
		{Type: contracts.ChunkTextEnd, Node: "chat", OpID: "op", SegmentID: "step-0~3"},
		{Type: contracts.ChunkTextInvalidated, OpID: "other", SegmentID: "step-0~3"}, // another operation's segment
		{Type: contracts.ChunkDone},
	} {
		p.chunk(c)
	}
	require.Equal(t, "chat: Hello bra\n"+
		"(the model pass failed midway and is retried: discard the text above)\n"+
		"chat: Hello brave world\n", b.String())
}

// A status chunk (a failed call is retried) is printed on a line of its own.
func TestStatusIsPrinted(t *testing.T) {
	var b bytes.Buffer
	p := newPrinter(&b, false)
	for _, c := range []contracts.Chunk{
		{Type: contracts.ChunkToolCallStart, Tool: "db_query", Input: []byte(`{}`)},
		{Type: contracts.ChunkStatus, Node: "agent", Tool: "db_query", Message: "db_query failed (attempt 1 of 3), retrying in 1 s"},
	} {
		p.chunk(c)
	}
	require.Equal(t, "→ db_query {}\n… db_query failed (attempt 1 of 3), retrying in 1 s\n", b.String())
}

func TestReplayNeedsOneSource(t *testing.T) {
	for _, args := range [][]string{{"replay"}, {"replay", "--workflow", "w", "--history", "h.json"}, {"replay", "extra"}} {
		_, errOut, code := runMain(t, args...)
		require.Equal(t, 2, code, "%v", args)
		require.True(t, strings.HasPrefix(errOut, "starter: replay "), "%v: %s", args, errOut)
		require.Contains(t, errOut, "usage: starter replay ", "%v", args)
	}
	out, errOut, code := runMain(t, "replay", "--history", filepath.Join("..", "kortyxtest", "testdata", "hello.json"))
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "ok "+filepath.Join("..", "kortyxtest", "testdata", "hello.json")+"\n", out)
	out, errOut, code = runMain(t, "replay", "--history", "missing.json")
	require.Equal(t, 1, code)
	require.Empty(t, out, "no history, no line")
	require.Equal(t, "starter: open missing.json: no such file or directory\n", errOut)
}
