package sessions

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTurnsCancelOnlyWhenTheLastOwnReaderLeavesEarly(t *testing.T) {
	started := TurnStarted{RunID: "run-1", TurnIndex: 1}
	reattached := TurnStarted{RunID: "run-1", TurnIndex: 1, Reattached: true}
	for _, tc := range []struct {
		name    string
		first   TurnStarted
		readers int
		over    bool
		cancel  bool // not TurnsOptions.Continue
		want    []bool
	}{
		{"one reader leaves", started, 1, false, true, []bool{true}},
		{"two readers leave", started, 2, false, true, []bool{false, true}},
		{"continue mode", started, 2, false, false, []bool{false, false}},
		{"response over", started, 1, true, true, []bool{false}},
		{"reattached to a turn started elsewhere", reattached, 2, false, true, []bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := &Turns{}
			a := turnAsk{session: "s", clientTurn: "t1"}
			sl := ts.slot(a)
			tr, fresh := ts.attach(sl, tc.first, 0)
			require.True(t, fresh)
			for range tc.readers - 1 {
				again, fresh := ts.attach(sl, reattached, 0)
				require.False(t, fresh)
				require.Same(t, tr, again)
			}
			_, stop := context.WithCancel(context.Background())
			tr.stop = stop
			if tc.over {
				ts.responseOver(tr)
			}
			var got []bool
			for range tc.readers {
				got = append(got, ts.leave(tr, true, tc.cancel, time.Hour))
			}
			require.Equal(t, tc.want, got)
			ts.put(a, sl)
		})
	}
}

func TestTurnsExpectReattach(t *testing.T) {
	ts := &Turns{}
	a := turnAsk{session: "s", clientTurn: "t1"}
	sl := ts.slot(a)
	got, cp := ts.expectReattach(sl, false)
	require.False(t, got, "unknown: a new attempt")
	require.Empty(t, cp)
	tr, _ := ts.attach(sl, TurnStarted{RunID: "run-1", TurnIndex: 1}, 0)
	got, _ = ts.expectReattach(sl, false)
	require.True(t, got, "live")
	ts.settle(tr, "")
	got, _ = ts.expectReattach(sl, false)
	require.False(t, got, "failed or stopped: a retry runs it again")
	got, _ = ts.expectReattach(sl, true)
	require.True(t, got, "failed or stopped: a reconnect reads it")
	ts.settle(tr, "cp-1")
	got, cp = ts.expectReattach(sl, false)
	require.True(t, got, "committed")
	require.Equal(t, "cp-1", cp)
	got, _ = ts.expectReattach(nil, true)
	require.False(t, got, "no clientTurnId")
}

func TestTurnsForgetAsksWithoutATurn(t *testing.T) {
	ts := &Turns{}
	a := turnAsk{session: "s", clientTurn: "t1"}
	sl := ts.slot(a)
	ts.put(a, sl)
	require.Empty(t, ts.asks, "a refused request leaves nothing behind")
	sl = ts.slot(a)
	tr, _ := ts.attach(sl, TurnStarted{RunID: "run-1", TurnIndex: 1}, 0)
	ts.put(a, sl)
	require.Len(t, ts.asks, 1, "a turn is remembered")
	ts.done(tr, &a)
	require.Len(t, ts.asks, 1)
}

// An ask whose ended turn is evicted from the remembered ones while a request still holds its
// slot is forgotten when that request gives the slot back.
func TestTurnsForgetAnEvictedAskOnPut(t *testing.T) {
	ts := &Turns{}
	a := turnAsk{session: "s", clientTurn: "t1"}
	sl := ts.slot(a)
	tr, _ := ts.attach(sl, TurnStarted{RunID: "run-1", TurnIndex: 1}, 0)
	ts.done(tr, &a)
	for i := 0; i < defaultRememberedTurns; i++ { // later turns push a out of the remembered ones
		b := turnAsk{session: "s", clientTurn: "other", token: strconv.Itoa(i)}
		bs := ts.slot(b)
		btr, _ := ts.attach(bs, TurnStarted{RunID: "run-b", TurnIndex: i + 2}, 0)
		ts.put(b, bs)
		ts.done(btr, &b)
	}
	require.Contains(t, ts.asks, a, "still held by its request")
	ts.put(a, sl)
	require.NotContains(t, ts.asks, a)
	require.Len(t, ts.asks, defaultRememberedTurns, "the remembered ones stay")
}

// Options.RememberedTurns bounds the ended turns a handler remembers: beyond it the oldest
// are forgotten.
func TestTurnsRememberAtMostMax(t *testing.T) {
	ts := &Turns{o: TurnsOptions{Remembered: 3}}
	for i := 0; i < 10; i++ {
		a := turnAsk{session: "s", clientTurn: "t" + strconv.Itoa(i)}
		sl := ts.slot(a)
		tr, _ := ts.attach(sl, TurnStarted{RunID: "run-" + strconv.Itoa(i), TurnIndex: i + 1}, 0)
		ts.put(a, sl)
		ts.done(tr, &a)
	}
	require.Len(t, ts.asks, 3)
	require.Len(t, ts.ended, 3)
	for i := 7; i < 10; i++ {
		require.Contains(t, ts.asks, turnAsk{session: "s", clientTurn: "t" + strconv.Itoa(i)}, "the newest stay")
	}
}

func TestRememberedTurnsOption(t *testing.T) {
	ts, err := NewTurns(&Service{}, TurnsOptions{})
	require.NoError(t, err)
	require.Equal(t, defaultRememberedTurns, ts.o.Remembered)
	ts, err = NewTurns(&Service{}, TurnsOptions{Remembered: 10})
	require.NoError(t, err)
	require.Equal(t, 10, ts.o.Remembered)
	_, err = NewTurns(nil, TurnsOptions{})
	require.Error(t, err)
}
