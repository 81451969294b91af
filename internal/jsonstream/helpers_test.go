package jsonstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// run feeds the chunks to a new Extractor and returns all events, the first
// error (Write or Close) and whether the root object completed.
func run(t testing.TB, fields map[string]Mode, chunks []string) ([]Event, error, bool) {
	t.Helper()
	x, err := New(fields)
	require.NoError(t, err)
	var all []Event
	for _, c := range chunks {
		evs, err := x.Write(c)
		all = append(all, evs...)
		if err != nil {
			_, cerr := x.Close()
			require.Equal(t, err, cerr, "Close must report the sticky error")
			evs, werr := x.Write("more")
			require.Empty(t, evs)
			require.Equal(t, err, werr, "Write must report the sticky error")
			return all, err, x.Complete()
		}
	}
	evs, err := x.Close()
	all = append(all, evs...)
	return all, err, x.Complete()
}

// split cuts s at the given offsets pattern: chunk sizes cycle through sizes
// (each taken modulo 8, plus 1); no sizes means one piece.
func split(s string, sizes []byte) []string {
	if len(sizes) == 0 {
		return []string{s}
	}
	var out []string
	for k := 0; len(s) > 0; k++ {
		n := int(sizes[k%len(sizes)]%8) + 1
		if n > len(s) {
			n = len(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func bytewise(s string) []string {
	out := make([]string, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = s[i : i+1]
	}
	return out
}

func randomChunks(r *rand.Rand, s string) []string {
	var out []string
	for len(s) > 0 {
		n := 1 + r.Intn(12)
		if n > len(s) {
			n = len(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// canonical renders events independently of how the input was chunked: one
// line per Set value and per Append item, and consecutive deltas of the same
// path merged into one line.
func canonical(evs []Event) string {
	var b strings.Builder
	var pendPath string
	var pend strings.Builder
	havePend := false
	flush := func() {
		if havePend {
			fmt.Fprintf(&b, "D %s %q\n", pendPath, pend.String())
			pend.Reset()
			havePend = false
		}
	}
	for _, ev := range evs {
		switch ev.Kind {
		case TextDelta:
			if havePend && pendPath != ev.Path {
				flush()
			}
			pendPath, havePend = ev.Path, true
			pend.WriteString(ev.Delta)
		case Set:
			flush()
			fmt.Fprintf(&b, "S %s %s\n", ev.Path, ev.Value)
		case Append:
			flush()
			for _, it := range ev.Items {
				fmt.Fprintf(&b, "A %s %s\n", ev.Path, it)
			}
		default:
			panic("unknown kind " + string(ev.Kind))
		}
	}
	flush()
	return b.String()
}

// checkEventShape asserts invariants every event must satisfy.
func checkEventShape(t testing.TB, evs []Event) {
	t.Helper()
	for _, ev := range evs {
		// ev.Path may be empty: "*" matches the key "" too.
		switch ev.Kind {
		case Set:
			require.NotEmpty(t, ev.Value)
			require.Nil(t, ev.Items)
			require.Empty(t, ev.Delta)
		case Append:
			require.NotEmpty(t, ev.Items)
			require.Nil(t, ev.Value)
			require.Empty(t, ev.Delta)
		case TextDelta:
			require.NotEmpty(t, ev.Delta, "text-delta events are never empty")
			require.True(t, utf8.ValidString(ev.Delta), "delta %q must be valid UTF-8", ev.Delta)
			require.Nil(t, ev.Value)
			require.Nil(t, ev.Items)
		default:
			t.Fatalf("unknown kind %q", ev.Kind)
		}
	}
}

// reference computes the expected events for a valid document with
// encoding/json, walking it in document order (so repeated keys are seen),
// matching paths segment by segment. It reports ok=false when the object at
// the first '{' is not valid JSON according to encoding/json.
func reference(doc string, fields map[string]Mode) (evs []Event, ok bool) {
	start := strings.IndexByte(doc, '{')
	if start < 0 {
		return nil, false
	}
	var root json.RawMessage
	if err := json.NewDecoder(strings.NewReader(doc[start:])).Decode(&root); err != nil {
		return nil, false
	}
	w := &refWalker{last: map[string]string{}}
	for p, m := range fields {
		w.pats = append(w.pats, refPattern{segs: strings.Split(p, "."), mode: m})
	}
	w.walkContainer(root, nil)
	return w.out, true
}

type refPattern struct {
	segs []string
	mode Mode
}

type refWalker struct {
	pats []refPattern
	last map[string]string
	out  []Event
}

func (w *refWalker) modes(path []string) map[Mode]bool {
	ms := map[Mode]bool{}
	for _, p := range w.pats {
		if len(p.segs) != len(path) {
			continue
		}
		match := true
		for i, s := range p.segs {
			if s != "*" && s != path[i] {
				match = false
				break
			}
		}
		if match {
			ms[p.mode] = true
		}
	}
	return ms
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		panic(err)
	}
	return b.String()
}

func child(path []string, seg string) []string {
	return append(append([]string(nil), path...), seg)
}

// walkContainer emits the events of the members of an object or array.
func (w *refWalker) walkContainer(raw []byte, path []string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		panic(err)
	}
	isArray := tok == json.Delim('[')
	ms := w.modes(path)
	for i := 0; dec.More(); i++ {
		seg := strconv.Itoa(i)
		if !isArray {
			k, err := dec.Token()
			if err != nil {
				panic(err)
			}
			seg = k.(string)
		}
		var sub json.RawMessage
		if err := dec.Decode(&sub); err != nil {
			panic(err)
		}
		w.walk(sub, child(path, seg))
		if isArray && ms[Append] {
			w.out = append(w.out, Event{Kind: Append, Path: strings.Join(path, "."), Items: []json.RawMessage{json.RawMessage(compact(sub))}})
		}
	}
}

func (w *refWalker) walk(raw []byte, path []string) {
	ms := w.modes(path)
	raw = bytes.TrimSpace(raw)
	p := strings.Join(path, ".")
	switch raw[0] {
	case '{', '[':
		w.walkContainer(raw, path)
	case '"':
		if ms[TextDelta] {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				panic(err)
			}
			if s != "" {
				w.out = append(w.out, Event{Kind: TextDelta, Path: p, Delta: s})
			}
		}
	}
	if ms[Set] {
		c := compact(raw)
		if last, ok := w.last[p]; !ok || last != c {
			w.last[p] = c
			w.out = append(w.out, Event{Kind: Set, Path: p, Value: json.RawMessage(c)})
		}
	}
}
