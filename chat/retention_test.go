package chat

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
	"github.com/kortyx-go/kortyx/sessions"
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

// A turn this handler finalized is remembered, for the requests that reattach to it, by its ids
// and flags: the handler's registry holds neither the request that started it nor its body
// (here a 600 KB prompt) nor the response read for its finalization (here a 300 KB message),
// while OnResponseFinalized still gets the request.
func TestEndedTurnHoldsNoRequestNorBody(t *testing.T) {
	var got ResponseFinalized
	h := &Handler{o: Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), FinalizeTimeout: time.Hour,
		OnResponseFinalized: func(_ context.Context, ev ResponseFinalized) error { got = ev; return nil }}, index: newSessionIndex(10)}
	h.turns.max = 10
	prompt := strings.Repeat("p", 600<<10)
	r := httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(`{"sessionId": "s1", "clientTurnId": "t1", "messages": [{"role": "user", "content": "`+prompt+`"}]}`))
	req, err := parseRequest(r, 1<<20)
	require.NoError(t, err)
	a := &ask{session: req.SessionID, clientTurn: req.ClientTurnID, kind: "prompt"}

	// As ServeHTTP starts a turn and respond reads it: the slot, the attempt, one reader that
	// feeds the finalization, then finalizes it.
	sl := h.turns.slot(*a)
	require.NoError(t, sl.acquire(context.Background()))
	started := sessions.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1}
	tr, fresh := h.turns.attach(sl, started, 0)
	require.True(t, fresh)
	h.started(tr, r, req, a, 0)
	sl.release()
	h.turns.put(*a, sl)
	live := reachable(&h.turns)
	require.Zero(t, live.count(Message{}), "a live turn keeps the ids of its request, not its messages")
	require.Less(t, live.bytes, 64<<10)

	feeder := h.turns.join(tr, 0)
	require.True(t, feeder)
	reply := strings.Repeat("r", 300<<10)
	pos := h.turns.feed(tr, 0, stream.Entry{Offset: 1, Chunk: contracts.Chunk{Type: contracts.ChunkMessage, Content: reply}})
	pos = h.turns.feed(tr, pos, stream.Entry{Offset: 2, Chunk: contracts.Chunk{Type: contracts.ChunkDone}})
	require.True(t, h.turns.claim(tr, pos, false))
	h.finish(tr, nil)
	h.quit(r, req, tr, feeder, false)
	<-tr.ended

	require.Same(t, r, got.Request, "OnResponseFinalized gets the request")
	require.Equal(t, "t1", got.ClientTurnID)
	require.Equal(t, "s1", got.SessionID)
	require.Equal(t, reply, got.Message.Content)

	ended := reachable(&h.turns)
	require.Zero(t, ended.count(http.Request{}), "no *http.Request")
	require.Zero(t, ended.count(Message{}), "no message of the request")
	require.Zero(t, ended.count(contracts.Chunk{}), "no chunk of the response")
	require.Less(t, ended.bytes, 1<<10, "a few ids")

	// A request that reattaches to the ended turn still gets it: the same run, finalized, once.
	again := h.turns.slot(*a)
	reattach, _ := h.turns.expectReattach(again, true)
	require.True(t, reattach)
	tr2, fresh := h.turns.attach(again, sessions.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1, Reattached: true}, 0)
	require.False(t, fresh, "no second finalization")
	require.Equal(t, started, tr2.ts)
	require.False(t, h.turns.join(tr2, 0))
	require.False(t, h.turns.claim(tr2, 2, false))
	select {
	case <-tr2.ended:
	default:
		t.Fatal("the remembered turn's channel is the ended turn's, closed")
	}
	require.False(t, h.turns.leave(tr2, true, true, time.Hour), "an ended turn is never cancelled")
	h.turns.put(*a, again)
	require.Contains(t, h.turns.asks, *a, "still remembered")
}

// An answer turn's remembered copy keeps the answered token its reattaching readers follow with.
func TestEndedAnswerTurnKeepsItsToken(t *testing.T) {
	var ts turns
	a := ask{session: "s1", clientTurn: "t2", kind: "interrupt-response", token: "tok"}
	sl := ts.slot(a)
	tr, _ := ts.attach(sl, sessions.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 2, Begin: 7}, 7)
	r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
	req := &Request{SessionID: "s1", ClientTurnID: "t2", Messages: []Message{{Role: "user", Content: "Ada",
		Metadata: &Metadata{Resume: &Resume{Token: " tok ", RequestID: "q"}}}}}
	ts.origin(tr, r, req, &a)
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
	require.Nil(t, kept.r)
	require.Nil(t, kept.req)
	require.Nil(t, kept.bg)
}
