package sessions

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
)

// reach is what a value holds: how many values of each type it reaches, and the bytes of the
// strings and byte slices it reaches. It does not look inside an *http.Request (counted only),
// channels or funcs.
type reach struct {
	types map[reflect.Type]int
	bytes int
	seen  map[uintptr]bool
}

func reachable(v any) *reach {
	r := &reach{types: map[reflect.Type]int{}, seen: map[uintptr]bool{}}
	r.walk(reflect.ValueOf(v))
	return r
}

var httpRequestType = reflect.TypeOf(http.Request{})

func (r *reach) walk(v reflect.Value) {
	if !v.IsValid() {
		return
	}
	r.types[v.Type()]++
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || r.seen[v.Pointer()] {
			return
		}
		r.seen[v.Pointer()] = true
		if v.Type().Elem() == httpRequestType {
			r.types[httpRequestType]++
			return
		}
		r.walk(v.Elem())
	case reflect.Interface:
		r.walk(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			r.walk(v.Field(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			r.bytes += v.Len()
			return
		}
		for i := range v.Len() {
			r.walk(v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			r.walk(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			r.walk(it.Key())
			r.walk(it.Value())
		}
	case reflect.String:
		r.bytes += v.Len()
	}
}

func (r *reach) count(v any) int { return r.types[reflect.TypeOf(v)] }

// A run attempt the registry finalized is remembered, for the readers that reattach to it, by
// its ids and flags: the registry holds neither the context of the reader that started it, nor
// its callback, nor the response read for its finalization (here a 300 KB message), while the
// callback still gets the reader's context values and the response.
func TestEndedTurnHoldsNoRequestNorBody(t *testing.T) {
	type key struct{}
	var got Finalized
	var gotCtx context.Context
	big := strings.Repeat("p", 600<<10) // what a wire's callback may hold (a request), not the registry
	ts := &Turns{o: TurnsOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), FinalizeTimeout: time.Hour, Remembered: 10}}
	r := httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(big))
	ctx := context.WithValue(r.Context(), key{}, "v")

	// As a wire starts a turn and reads it: the slot, the attempt, one reader that feeds the
	// finalization, then finalizes it.
	tr, err := ts.Take(ctx, TurnAsk{SessionID: "s1", ClientTurnID: "t1"})
	require.NoError(t, err)
	started := TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1}
	tr.Attach(ctx, started, 0, 0, func(ctx context.Context, f Finalized) { got, gotCtx = f, ctx; _ = r })
	require.True(t, tr.feeder)
	live := reachable(ts)
	require.Zero(t, live.count(http.Request{}), "a live turn keeps the ids of its reader, not a request")
	require.Less(t, live.bytes, 64<<10)

	reply := strings.Repeat("r", 300<<10)
	tr.pos = ts.feed(tr.t, 0, stream.Entry{Offset: 1, Chunk: contracts.Chunk{Type: contracts.ChunkMessage, Content: reply}})
	tr.pos = ts.feed(tr.t, tr.pos, stream.Entry{Offset: 2, Chunk: contracts.Chunk{Type: contracts.ChunkDone}})
	tr.Finish(ctx, nil)
	<-tr.t.ended

	require.Equal(t, "v", gotCtx.Value(key{}), "the callback gets the reader's context values")
	require.NoError(t, gotCtx.Err())
	require.Equal(t, "t1", got.ClientTurnID)
	require.Equal(t, "s1", got.SessionID)
	require.Equal(t, "run-1", got.RunID)
	require.Equal(t, StatusCompleted, got.Status)
	require.Equal(t, reply, got.Message.Content)

	ended := reachable(ts)
	require.Zero(t, ended.count(http.Request{}), "no *http.Request")
	require.Zero(t, ended.count(contracts.Chunk{}), "no chunk of the response")
	require.Less(t, ended.bytes, 1<<10, "a few ids")

	// A reader that reattaches to the ended turn still gets it: the same run, finalized, once.
	a := turnAsk{session: "s1", clientTurn: "t1"}
	again, err := ts.Take(context.Background(), TurnAsk{SessionID: "s1", ClientTurnID: "t1"})
	require.NoError(t, err)
	require.True(t, again.ExpectReattach(context.Background(), true))
	tr2, fresh := ts.attach(again.sl, TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1, Reattached: true}, 0)
	require.False(t, fresh, "no second finalization")
	require.Equal(t, started, tr2.ts)
	require.False(t, ts.join(tr2, 0))
	require.False(t, ts.claim(tr2, 2, false))
	select {
	case <-tr2.ended:
	default:
		t.Fatal("the remembered turn's channel is the ended turn's, closed")
	}
	require.False(t, ts.leave(tr2, true, true, time.Hour), "an ended turn is never cancelled")
	again.Release()
	require.Contains(t, ts.asks, a, "still remembered")
}

// An answer turn's remembered copy keeps the answered token its reattaching readers follow with.
func TestEndedAnswerTurnKeepsItsToken(t *testing.T) {
	ts := &Turns{}
	a := turnAsk{session: "s1", clientTurn: "t2", answer: true, token: "tok"}
	sl := ts.slot(a)
	tr, _ := ts.attach(sl, TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 2, Begin: 7}, 7)
	ts.origin(tr, context.Background(), TurnAsk{SessionID: "s1", ClientTurnID: "t2", Answer: true, Token: "tok"}, &a, nil)
	ts.put(a, sl)
	ts.settle(tr, "cp-1")
	ts.done(tr, &a)
	kept := ts.asks[a].last
	require.NotSame(t, tr, kept)
	require.Equal(t, "tok", kept.token)
	require.Equal(t, int64(7), kept.begin)
	require.Equal(t, "cp-1", kept.checkpoint)
	reattach, cp := ts.expectReattach(ts.asks[a], false)
	require.True(t, reattach)
	require.Equal(t, "cp-1", cp)
	require.Empty(t, kept.session)
	require.Nil(t, kept.base)
	require.Nil(t, kept.onFinalized)
	require.Nil(t, kept.bg)
}
