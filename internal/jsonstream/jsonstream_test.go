package jsonstream

import (
	"encoding/json"
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var kortyxFields = map[string]Mode{"subject": Set, "body": TextDelta, "bullets": Append}

const kortyxDoc = `{"subject":"Hi","body":"Hello there","bullets":["a","b"]}`

func TestKortyxExample(t *testing.T) {
	want := "S subject \"Hi\"\n" +
		"D body \"Hello there\"\n" +
		"A bullets \"a\"\n" +
		"A bullets \"b\"\n"
	r := rand.New(rand.NewSource(1))
	chunkings := map[string][]string{
		"whole":    {kortyxDoc},
		"bytewise": bytewise(kortyxDoc),
	}
	for k := 0; k < 50; k++ {
		chunkings["random"+string(rune('A'+k%26))+string(rune('a'+k/26))] = randomChunks(r, kortyxDoc)
	}
	for name, chunks := range chunkings {
		t.Run(name, func(t *testing.T) {
			evs, err, complete := run(t, kortyxFields, chunks)
			require.NoError(t, err)
			require.True(t, complete)
			checkEventShape(t, evs)
			require.Equal(t, want, canonical(evs))
			require.Equal(t, Event{Kind: Set, Path: "subject", Value: json.RawMessage(`"Hi"`)}, evs[0])
		})
	}

	// One character at a time, the body streams one delta per character.
	evs, err, _ := run(t, kortyxFields, bytewise(kortyxDoc))
	require.NoError(t, err)
	var deltas []string
	for _, ev := range evs {
		if ev.Kind == TextDelta {
			require.Equal(t, "body", ev.Path)
			deltas = append(deltas, ev.Delta)
		}
	}
	require.Equal(t, strings.Split("Hello there", ""), deltas)
}

func TestEventsPerWrite(t *testing.T) {
	x, err := New(kortyxFields)
	require.NoError(t, err)
	steps := []struct {
		piece string
		want  []Event
	}{
		{"```json\n{\"subj", nil},
		{"ect\":\"H", nil},
		{"i\",\"body\":\"Hel", []Event{{Kind: Set, Path: "subject", Value: json.RawMessage(`"Hi"`)}, {Kind: TextDelta, Path: "body", Delta: "Hel"}}},
		{"lo", []Event{{Kind: TextDelta, Path: "body", Delta: "lo"}}},
		{"\\", nil},
		{"n\",\"bullets\":[\"a\",\"b", []Event{{Kind: TextDelta, Path: "body", Delta: "\n"}, {Kind: Append, Path: "bullets", Items: []json.RawMessage{json.RawMessage(`"a"`)}}}},
		{"\"", []Event{{Kind: Append, Path: "bullets", Items: []json.RawMessage{json.RawMessage(`"b"`)}}}},
		{"]}\n```\n", nil},
	}
	for _, s := range steps {
		evs, err := x.Write(s.piece)
		require.NoError(t, err, s.piece)
		require.Equal(t, s.want, evs, s.piece)
	}
	require.True(t, x.Complete())
	evs, err := x.Close()
	require.NoError(t, err)
	require.Empty(t, evs)
	_, err = x.Write("x")
	require.ErrorIs(t, err, ErrClosed)
}

func TestAppendMergesItemsOfOneWrite(t *testing.T) {
	x, err := New(map[string]Mode{"l": Append})
	require.NoError(t, err)
	evs, err := x.Write(`{"l":[1, {"a" : [2]}, "x"`)
	require.NoError(t, err)
	require.Equal(t, []Event{{Kind: Append, Path: "l", Items: []json.RawMessage{
		json.RawMessage(`1`), json.RawMessage(`{"a":[2]}`), json.RawMessage(`"x"`),
	}}}, evs)
	evs, err = x.Write(`,null]}`)
	require.NoError(t, err)
	require.Equal(t, []Event{{Kind: Append, Path: "l", Items: []json.RawMessage{json.RawMessage(`null`)}}}, evs)
}

// table runs each case over several chunkings and compares canonical events.
type tableCase struct {
	name   string
	fields map[string]Mode
	doc    string
	want   string
}

func runTable(t *testing.T, cases []tableCase) {
	t.Helper()
	r := rand.New(rand.NewSource(7))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chunkings := [][]string{{tc.doc}, bytewise(tc.doc)}
			for k := 0; k < 10; k++ {
				chunkings = append(chunkings, randomChunks(r, tc.doc))
			}
			for _, chunks := range chunkings {
				evs, err, complete := run(t, tc.fields, chunks)
				require.NoError(t, err)
				require.True(t, complete)
				checkEventShape(t, evs)
				require.Equal(t, tc.want, canonical(evs), "chunks %q", chunks)
			}
			// The independent encoding/json oracle agrees.
			ref, ok := reference(tc.doc, tc.fields)
			require.True(t, ok)
			require.Equal(t, tc.want, canonical(ref))
		})
	}
}

func TestPaths(t *testing.T) {
	runTable(t, []tableCase{
		{
			name:   "wildcard index",
			fields: map[string]Mode{"items.*.name": TextDelta},
			doc:    `{"items":[{"name":"x"},{"name":"y","other":"z"}]}`,
			want:   "D items.0.name \"x\"\nD items.1.name \"y\"\n",
		},
		{
			name:   "wildcard object key",
			fields: map[string]Mode{"meta.*": Set},
			doc:    `{"meta":{"a":1,"b":{"c":[true]},"c":"s"},"other":{"a":2}}`,
			want:   "S meta.a 1\nS meta.b {\"c\":[true]}\nS meta.c \"s\"\n",
		},
		{
			name:   "top-level wildcard",
			fields: map[string]Mode{"*": Set},
			doc:    `{"a":1,"b":[1,2]}`,
			want:   "S a 1\nS b [1,2]\n",
		},
		{
			name:   "numeric index",
			fields: map[string]Mode{"items.1": Set},
			doc:    `{"items":[{"n":0},{"n":1},{"n":2}]}`,
			want:   "S items.1 {\"n\":1}\n",
		},
		{
			name:   "numeric segment also names an object key",
			fields: map[string]Mode{"m.1": Set},
			doc:    `{"m":{"0":"a","1":"b"}}`,
			want:   "S m.1 \"b\"\n",
		},
		{
			name:   "literal and wildcard overlap",
			fields: map[string]Mode{"a.*": Set, "a.b": TextDelta, "*.c": Set},
			doc:    `{"a":{"b":"xy","c":3},"z":{"c":4}}`,
			want:   "D a.b \"xy\"\nS a.b \"xy\"\nS a.c 3\nS z.c 4\n",
		},
		{
			name:   "escaped key",
			fields: map[string]Mode{"a\"b.é": Set},
			doc:    `{"a\"b":{"\u00e9":1}}`,
			want:   "S a\"b.é 1\n",
		},
		{
			name:   "unmatched subtrees are skipped",
			fields: map[string]Mode{"x.y": Set},
			doc:    `{"a":{"x":{"y":1}},"x":[{"y":2}],"x":{"z":{"y":3},"y":4}}`,
			want:   "S x.y 4\n",
		},
	})
}

func TestValues(t *testing.T) {
	runTable(t, []tableCase{
		{
			name:   "nested set and inner text-delta",
			fields: map[string]Mode{"a": Set, "a.b": TextDelta},
			doc:    `{"a": {"b": "hey", "n": 1}}`,
			want:   "D a.b \"hey\"\nS a {\"b\":\"hey\",\"n\":1}\n",
		},
		{
			name:   "arrays of arrays",
			fields: map[string]Mode{"m": Append, "m.*": Append, "m.1": Set},
			doc:    `{"m":[[1,2],[3,[4,5]],[]]}`,
			want: "A m.0 1\nA m.0 2\nA m [1,2]\n" +
				"A m.1 3\nA m.1 [4,5]\nS m.1 [3,[4,5]]\nA m [3,[4,5]]\n" +
				"A m []\n",
		},
		{
			name:   "scalars",
			fields: map[string]Mode{"*": Set},
			doc:    "{\"i\":0,\"n\":-12.5e+3,\"e\":1E9,\"f\":0.25,\"t\":true,\"F\":false,\"z\":null,\"s\":\"\",\"o\":{},\"l\":[]}",
			want: "S i 0\nS n -12.5e+3\nS e 1E9\nS f 0.25\nS t true\nS F false\nS z null\n" +
				"S s \"\"\nS o {}\nS l []\n",
		},
		{
			name:   "compact value keeps string whitespace",
			fields: map[string]Mode{"a": Set},
			doc:    "{ \"a\" :\n [ 1 ,\t\"x y\" , { \"k\" : null } ] \n}",
			want:   "S a [1,\"x y\",{\"k\":null}]\n",
		},
		{
			name:   "append on non-array and text-delta on non-string",
			fields: map[string]Mode{"a": Append, "b": TextDelta, "c": TextDelta},
			doc:    `{"a":"str","b":[1],"c":{"d":"e"}}`,
			want:   "",
		},
		{
			name:   "empty string streams nothing",
			fields: map[string]Mode{"s": TextDelta},
			doc:    `{"s":""}`,
			want:   "",
		},
		{
			name:   "dedupe repeated key with identical value",
			fields: map[string]Mode{"a": Set, "b": Set},
			doc:    `{"a":{"x":1},"b":1,"a":{ "x" : 1 },"b":2,"b":2,"b":1}`,
			want:   "S a {\"x\":1}\nS b 1\nS b 2\nS b 1\n",
		},
		{
			name:   "items completed inside items",
			fields: map[string]Mode{"l": Append, "l.*": Set, "l.*.t": TextDelta},
			doc:    `{"l":[{"t":"ab"},{"t":"c"}]}`,
			want: "D l.0.t \"ab\"\nS l.0 {\"t\":\"ab\"}\nA l {\"t\":\"ab\"}\n" +
				"D l.1.t \"c\"\nS l.1 {\"t\":\"c\"}\nA l {\"t\":\"c\"}\n",
		},
	})
}

func TestPrefixAndSuffix(t *testing.T) {
	runTable(t, []tableCase{
		{
			name:   "markdown fence",
			fields: kortyxFields,
			doc:    "```json\n" + kortyxDoc + "\n```\n",
			want:   "S subject \"Hi\"\nD body \"Hello there\"\nA bullets \"a\"\nA bullets \"b\"\n",
		},
		{
			name:   "prose with invalid json-ish text before and garbage after",
			fields: map[string]Mode{"a": Set},
			doc:    "Sure! Here [is] \"it\": 1, 2\n{\"a\":1} trailing } ] {\"a\":2} garbage",
			want:   "S a 1\n",
		},
	})
}

func TestStrings(t *testing.T) {
	cases := []struct {
		name string
		lit  string // JSON string literal, quotes included
	}{
		{"quotes and newline", `"say \"hi\"\n"`},
		{"all simple escapes", `"\"\\\/\b\f\n\r\t"`},
		{"unicode escapes and surrogate pair", `"\u00e9\ud83d\ude00"`},
		{"uppercase hex", `"\u00E9\uD83D\uDE00x"`},
		{"raw multibyte", "\"é😀\""},
		{"mixed", "\"a\\u0041é\\n😀\\ud83d\\ude00z\""},
		{"lone high surrogate then char", `"\ud83dx"`},
		{"lone high surrogate at end", `"\ud83d"`},
		{"lone high surrogate then escape", `"\ud83d\n"`},
		{"high surrogate then bmp escape", `"\ud83d\u0041"`},
		{"two high surrogates then low", `"\ud83d\ud83d\ude00"`},
		{"lone low surrogate", `"\ude00\ud83d\ude00"`},
		{"invalid utf-8 bytes", "\"a\xffb\xe2\x82c\xe2\x82\xac\xed\xa0\x80\xf0\x9f\x98\""},
		{"truncated utf-8 before escape", "\"\xe2\x82\\n\""},
		{"high surrogate then raw multibyte", "\"\\ud83dé\""},
		{"nul escape", `"\u0000"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"s":` + tc.lit + `}`
			var want string
			require.NoError(t, json.Unmarshal([]byte(tc.lit), &want))
			fields := map[string]Mode{"s": TextDelta}
			var chunkings [][]string
			chunkings = append(chunkings, []string{doc}, bytewise(doc))
			for cut := 1; cut < len(doc); cut++ {
				chunkings = append(chunkings, []string{doc[:cut], doc[cut:]})
			}
			for _, chunks := range chunkings {
				evs, err, complete := run(t, fields, chunks)
				require.NoError(t, err)
				require.True(t, complete)
				checkEventShape(t, evs)
				var got strings.Builder
				for _, ev := range evs {
					require.Equal(t, TextDelta, ev.Kind)
					require.Equal(t, "s", ev.Path)
					got.WriteString(ev.Delta)
				}
				require.Equal(t, want, got.String(), "chunks %q", chunks)
			}
		})
	}
}

func TestHeldBackUntilComplete(t *testing.T) {
	x, err := New(map[string]Mode{"s": TextDelta})
	require.NoError(t, err)
	pieces := []struct{ in, want string }{
		{`{"s":"a\`, "a"},
		{`u00`, ""},
		{`e9\ud8`, "é"},
		{`3d`, ""},
		{`\`, ""},
		{`ude`, ""},
		{`00`, "😀"},
		{"\xf0\x9f", ""},
		{"\x98", ""},
		{"\x80b", "😀b"},
		{`"}`, ""},
	}
	for _, p := range pieces {
		evs, err := x.Write(p.in)
		require.NoError(t, err)
		if p.want == "" {
			require.Empty(t, evs, "piece %q", p.in)
			continue
		}
		require.Equal(t, []Event{{Kind: TextDelta, Path: "s", Delta: p.want}}, evs, "piece %q", p.in)
	}
	require.True(t, x.Complete())
}

func TestMalformed(t *testing.T) {
	cases := []struct {
		doc    string
		offset int64
	}{
		{`{"a" 1}`, 5},
		{`{"a":1 "b":2}`, 7},
		{`{"a":}`, 5},
		{`{a:1}`, 1},
		{`{"a":1,}`, 7},
		{`{"a":[1,]}`, 8},
		{`{"a":[1}`, 7},
		{`{"a":{"b":1]}`, 11},
		{`{"a":tru}`, 8},
		{`{"a":nul1}`, 8},
		{`{"a":-}`, 6},
		{`{"a":01}`, 6},
		{`{"a":1.}`, 7},
		{`{"a":1e}`, 7},
		{`{"a":+1}`, 5},
		{`{"a":.5}`, 5},
		{`{"a":"x` + "\n" + `"}`, 7},
		{`{"a":"\x"}`, 7},
		{`{"a":"\u12g4"}`, 10},
		{`{"a":'x'}`, 5},
		{"prefix {\"a\":1,,}", 14},
		{`{"a":truex}`, 9},
		{`{"a":[1 2]}`, 8},
		{`{"a" : 1 : 2}`, 9},
		{`{,}`, 1},
		{`{"a":1}}`, -1}, // text after the root is ignored
	}
	for _, tc := range cases {
		t.Run(tc.doc, func(t *testing.T) {
			for _, chunks := range [][]string{{tc.doc}, bytewise(tc.doc)} {
				fields := map[string]Mode{"a": Set, "b": TextDelta}
				_, err, _ := run(t, fields, chunks)
				if tc.offset < 0 {
					require.NoError(t, err)
					continue
				}
				var se *SyntaxError
				require.True(t, errors.As(err, &se), "want a *SyntaxError, got %v", err)
				require.Equal(t, tc.offset, se.Offset, se.Error())
				require.Contains(t, se.Error(), "offset")
			}
			_, ok := reference(tc.doc, nil)
			require.Equal(t, tc.offset < 0, ok, "encoding/json agrees on validity")
		})
	}
}

func TestErrorKeepsEarlierEvents(t *testing.T) {
	x, err := New(map[string]Mode{"a": Set, "b": TextDelta})
	require.NoError(t, err)
	evs, err := x.Write(`{"a":1,"b":"xy` + "\x01")
	require.Error(t, err)
	require.Equal(t, []Event{
		{Kind: Set, Path: "a", Value: json.RawMessage(`1`)},
		{Kind: TextDelta, Path: "b", Delta: "xy"},
	}, evs)
	evs, err2 := x.Write(`"}`)
	require.Empty(t, evs)
	require.Equal(t, err, err2)
	require.False(t, x.Complete())
}

func TestTruncatedInput(t *testing.T) {
	for _, doc := range []string{"", "no json here", "```json\n", `{"n":12`, `{"s":"ab`, `{"a":[1,2`} {
		evs, err, complete := run(t, map[string]Mode{"n": Set, "s": Set, "a": Set}, []string{doc})
		require.NoError(t, err, doc)
		require.False(t, complete, doc)
		require.Empty(t, evs, doc)
	}
}

func TestDeepNesting(t *testing.T) {
	for _, depth := range []int{1000, 200000} {
		open := strings.Repeat(`{"a":[`, depth)
		closing := strings.Repeat(`]}`, depth)
		doc := open + `"leaf"` + closing
		path := strings.TrimSuffix(strings.Repeat("a.0.", 3), ".")
		fields := map[string]Mode{path: Set, "a": Append}
		x, err := New(fields)
		require.NoError(t, err)
		var evs []Event
		for _, c := range split(doc, []byte{5, 2, 7}) {
			got, err := x.Write(c)
			require.NoError(t, err)
			evs = append(evs, got...)
		}
		require.True(t, x.Complete())
		require.Len(t, evs, 2)
		require.Equal(t, path, evs[0].Path)
		require.Equal(t, Append, evs[1].Kind)
		require.Len(t, evs[1].Items, 1)
		if depth <= 1000 {
			var v any
			require.NoError(t, json.Unmarshal(evs[0].Value, &v))
			ref, ok := reference(doc, fields)
			require.True(t, ok)
			require.Equal(t, canonical(ref), canonical(evs))
		}
	}
}

func TestNewValidation(t *testing.T) {
	for _, p := range []string{"", "a..b", ".a", "a.", ".", "a.*..b"} {
		_, err := New(map[string]Mode{"ok": Set, p: Set})
		require.Error(t, err, "path %q", p)
		require.Contains(t, err.Error(), `"`+p+`"`)
	}
	for _, m := range []Mode{"", "SET", "replace"} {
		_, err := New(map[string]Mode{"a": m})
		require.Error(t, err, "mode %q", m)
		require.Contains(t, err.Error(), `"a"`)
	}
	for _, fields := range []map[string]Mode{nil, {}, {"*": Set, "a.*.b.0": Append, "x y.é": TextDelta}} {
		x, err := New(fields)
		require.NoError(t, err)
		require.NotNil(t, x)
	}
}

// TestLinearWork counts the work instead of timing it: every input byte is
// consumed exactly once and the number of dispatch steps is bounded by the
// input length, for 1 MB written one byte at a time, while the buffers stay
// small when nothing is captured.
func TestLinearWork(t *testing.T) {
	var b strings.Builder
	b.WriteString("```json\n{\"body\":\"")
	for b.Len() < 1<<19 {
		b.WriteString(`lorem ipsum \"dolor\" sit \u00e9met 😀 `)
	}
	b.WriteString(`","items":[`)
	for i := 0; b.Len() < 1<<20; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"item","n":12345,"ok":true,"tags":["x","y"]}`)
	}
	b.WriteString("]}\n```")
	doc := b.String()

	x, err := New(map[string]Mode{"body": TextDelta, "items.*.name": TextDelta, "items": Append})
	require.NoError(t, err)
	maxCapture, maxArena, maxDelta := 0, 0, 0
	events := 0
	for i := 0; i < len(doc); i++ {
		evs, err := x.Write(doc[i : i+1])
		require.NoError(t, err)
		events += len(evs)
		maxCapture = max(maxCapture, cap(x.capture))
		maxArena = max(maxArena, cap(x.arena))
		maxDelta = max(maxDelta, cap(x.delta))
	}
	require.True(t, x.Complete())
	require.Positive(t, events)
	require.Equal(t, int64(len(doc)), x.scanned, "each byte is consumed exactly once")
	require.LessOrEqual(t, x.steps, int64(2*len(doc)), "bounded work per byte")
	require.Less(t, maxCapture, 256, "only the current item is captured")
	require.Less(t, maxArena, 64, "only the keys on the current path are kept")
	require.Less(t, maxDelta, 64, "deltas are emitted per write")

	// Whole-input feeding does no more work.
	y, err := New(map[string]Mode{"body": TextDelta, "items.*.name": TextDelta, "items": Append})
	require.NoError(t, err)
	_, err = y.Write(doc)
	require.NoError(t, err)
	require.Equal(t, int64(len(doc)), y.scanned)
	require.LessOrEqual(t, y.steps, x.steps)
}
