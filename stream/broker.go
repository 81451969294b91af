package stream

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kortyx-go/kortyx/contracts"
)

// Keyed is a chunk as sent by a publisher: Key identifies the chunk within its run so that a
// retried publish does not duplicate it (for example "w:17" for the 17th chunk of workflow code,
// "m:<opId>:<segment>:<n>" for the nth text delta of a model pass published by the model
// activity). An empty Key is never deduplicated.
type Keyed struct {
	Key   string
	Chunk contracts.Chunk
}

// Entry is a chunk as stored by a [Broker]: Offset is its position in the run's stream,
// assigned on append (1, 2, 3, … per run). Key is the publisher's key.
type Entry struct {
	Offset int64           `json:"offset"`
	Key    string          `json:"key"`
	Chunk  contracts.Chunk `json:"chunk"`
}

// Broker stores the ordered chunk stream of each run (identified by its Temporal workflow ID)
// and lets readers follow it. Implementations must be safe for concurrent use. Entries returned
// by a Broker share their JSON payloads with the broker: treat them as read-only.
type Broker interface {
	// Publish appends chunks in order, skipping any whose Key was already stored for runID (an
	// empty Key is never deduplicated). Safe for concurrent use.
	Publish(ctx context.Context, runID string, chunks ...Keyed) error
	// Read returns up to limit entries with Offset > after, without blocking (limit <= 0: all).
	Read(ctx context.Context, runID string, after int64, limit int) ([]Entry, error)
	// Wait blocks until the run has an entry with Offset > after, or ctx ends (returns ctx.Err()).
	Wait(ctx context.Context, runID string, after int64) error
	// Last returns the offset of the run's last entry (0 if none).
	Last(ctx context.Context, runID string) (int64, error)
	// Bounds returns the offset of the run's oldest retained entry and of its last entry
	// (0, 0 when the broker has nothing for the run). Entries first..last are retained;
	// offsets below first were dropped by a bound or were never stored.
	Bounds(ctx context.Context, runID string) (first, last int64, err error)
}

// Gone is the *contracts.Error with code STREAM_GONE that [Follow] returns when it cannot
// continue runID's stream exactly after offset after: the broker's entries of the run are
// first..last (0, 0: none).
func gone(runID string, after, first, last int64) *contracts.Error {
	why := fmt.Sprintf("the chunks after offset %d are no longer kept (the oldest kept is %d)", after, first)
	if last < after {
		why = fmt.Sprintf("the broker has no chunk as far as offset %d (the stream was lost or expired)", after)
	}
	e := goneError(runID, why+"; read the run's result or follow it again from offset 0")
	e.Details["after"], e.Details["first"], e.Details["last"] = after, first, last
	return e
}

// Until says when [Follow] (and the SSE endpoint) stops. The zero value is [UntilRun].
type Until int

const (
	// UntilRun stops after a done chunk that ends a response containing no interrupt chunk:
	// the run is over (a response ending in interrupt + done waits for a human, and so does a
	// limit-reached pause, which also carries an interrupt). Query value "run".
	UntilRun Until = iota
	// UntilResponse stops after the first done chunk: the end of one chat response.
	// Query value "response".
	UntilResponse
	// UntilCancel never stops by itself: following ends only when the context ends.
	// Query value "none".
	UntilCancel
)

// String returns the query value of u: "run", "response" or "none".
func (u Until) String() string {
	switch u {
	case UntilRun:
		return "run"
	case UntilResponse:
		return "response"
	case UntilCancel:
		return "none"
	}
	return fmt.Sprintf("Until(%d)", int(u))
}

// tracker applies an [Until] condition to a sequence of chunks.
type tracker struct {
	until       Until
	interrupted bool // the current response contains an interrupt chunk
}

// observe records c and reports whether following must stop after it.
func (t *tracker) observe(c contracts.Chunk) bool {
	switch c.Type {
	case contracts.ChunkInterrupt:
		t.interrupted = true
	case contracts.ChunkDone:
		interrupted := t.interrupted
		t.interrupted = false
		switch t.until {
		case UntilResponse:
			return true
		case UntilRun:
			return !interrupted
		}
	}
	return false
}

// followBatch is the page size of the reads done by [Follow].
const followBatch = 1024

// Follow reads the entries of runID with Offset > after in order, waiting for more as needed,
// and calls fn for each. It stops according to until, after calling fn for the chunk that
// meets the condition, and returns nil; if ctx ends first it returns ctx.Err() (always the case
// for [UntilCancel]). An error from fn or from the broker stops following and is returned as is.
//
// With [UntilRun] and after > 0, Follow first reads the entries up to after (without calling
// fn) to learn whether the response in progress already contains an interrupt, so that a
// reconnecting reader stops exactly where an uninterrupted one would; if the entry at after is
// the done chunk that ended the run, Follow returns nil at once. (With [UntilResponse], after
// at a done chunk means the next response.)
//
// With after > 0, Follow continues exactly after that offset or not at all: when the broker's
// last offset for the run is below after (the stream was lost, e.g. an in-memory broker
// restarted, or it expired) or its oldest retained entry is above after+1 (entries were dropped
// past the reader, at the start or while following), Follow returns a *contracts.Error with
// code STREAM_GONE (see [Reader]) without calling fn for the entries after the gap. With
// after == 0 it starts at the oldest retained entry.
func Follow(ctx context.Context, b Broker, runID string, after int64, until Until, fn func(Entry) error) error {
	return follow(ctx, b, runID, after, until, fn)
}

// follow is [Follow]: the entries of a [Reader] without the gone checks, handed to fn.
func follow(ctx context.Context, b Broker, runID string, after int64, until Until, fn func(Entry) error) error {
	r := NewReader(b, runID, after, ReaderOptions{Until: until})
	r.checks = false
	return drain(ctx, r, fn, nil)
}

// drain hands every entry of r to fn, and calls onIdle (when set) when r is idle; it returns nil
// at the reader's end.
func drain(ctx context.Context, r *Reader, fn func(Entry) error, onIdle func() error) error {
	for {
		e, err := r.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, ErrIdle):
			if onIdle != nil {
				if err := onIdle(); err != nil {
					return err
				}
			}
			continue
		case err != nil:
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// prime feeds t with the retained entries up to and including offset upTo, and reports whether
// the last of them is a done chunk that ended the run.
func prime(ctx context.Context, b Broker, runID string, upTo int64, t *tracker) (ended bool, err error) {
	var at int64
	for at < upTo {
		entries, err := b.Read(ctx, runID, at, followBatch)
		if err != nil || len(entries) == 0 {
			return ended, err
		}
		for _, e := range entries {
			if e.Offset > upTo {
				return ended, nil
			}
			at = e.Offset
			ended = t.observe(e.Chunk)
		}
	}
	return ended, nil
}
