package jsonstream

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fuzzFieldSets are the declared fields the fuzzer picks from.
var fuzzFieldSets = []map[string]Mode{
	kortyxFields,
	{"*": Set, "*.*": Append, "*.*.*": TextDelta, "a.*": TextDelta},
	{"*": TextDelta, "*.*": Set, "a": Append, "a.0": Set, "a.1.b": Set},
	{"*": Append, "*.*": Append, "*.*.*": Set, "x.*.y": TextDelta},
	{"a": Set, "a.b": TextDelta, "a.b.c": Append, "l": Append, "l.*": Set, "s": TextDelta, "l.*.s": TextDelta},
}

var fuzzSeeds = []string{
	kortyxDoc,
	"```json\n" + kortyxDoc + "\n```",
	`{"a":{"b":"x\"y\\z\n","c":[1,-2.5e+3,true,false,null]},"l":[{"s":"é"},{"s":"\ud83d\ude00"}]}`,
	`{"x":[{"y":"a"},{"y":"\u00e9\ud83d"}],"a":[[1],[2,[3]],{}],"s":"` + "\xe2\x82\xac\xff" + `"}`,
	`{"a":1,"a":1,"a":{"b":"q"},"a":{"b":"q"}}`,
	`{"a" 1}`,
	`{"a":[1,]}`,
	`{"a":"\ud800\udc00\udc00\ud800"}`,
	`prose { "a" : { "b" : "t" } } tail`,
	`{"a":01}`,
	`{"s":"` + "\x1f" + `"}`,
	`{"l":[{"s":"ab"`,
	`{"\u0061":{"b":"k\u0065y"},"":{"":[""]},"x":{"\u0079":"\t"}}`,
}

func FuzzExtractor(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, []byte{byte(i), 3, 1, 7}, uint8(i))
	}
	f.Fuzz(func(t *testing.T, doc string, cuts []byte, sel uint8) {
		checkDoc(t, doc, cuts, sel)
	})
}

// TestFuzzSeeds runs the fuzz property over the seeds with several chunkings
// even when not fuzzing (the checked-in corpus runs through FuzzExtractor).
func TestFuzzSeeds(t *testing.T) {
	for i, s := range fuzzSeeds {
		for sel := range len(fuzzFieldSets) {
			for _, cuts := range [][]byte{nil, {0}, {1, 2}, {byte(i), 5, 3}} {
				checkDoc(t, s, cuts, uint8(sel))
			}
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// checkDoc is the fuzz property: chunking never changes the events (nor the
// error, nor completion), and on valid input the events are what
// encoding/json says they should be.
func checkDoc(t *testing.T, doc string, cuts []byte, sel uint8) {
	fields := fuzzFieldSets[int(sel)%len(fuzzFieldSets)]
	whole, werr, wcomplete := run(t, fields, []string{doc})
	checkEventShape(t, whole)
	want := canonical(whole)

	chunkings := [][]string{split(doc, cuts)}
	if len(doc) <= 2048 {
		chunkings = append(chunkings, bytewise(doc))
	}
	for _, chunks := range chunkings {
		got, err, complete := run(t, fields, chunks)
		checkEventShape(t, got)
		require.Equal(t, want, canonical(got), "chunks %q", chunks)
		require.Equal(t, errString(werr), errString(err), "chunks %q", chunks)
		require.Equal(t, wcomplete, complete, "chunks %q", chunks)
	}

	ref, ok := reference(doc, fields)
	if ok {
		require.NoError(t, werr)
		require.True(t, wcomplete)
		require.Equal(t, canonical(ref), want)
		return
	}
	if werr == nil && wcomplete {
		// We accepted an object encoding/json rejects: only legitimate when
		// encoding/json's nesting limit (10000) was hit.
		nesting := strings.Count(doc, "{") + strings.Count(doc, "[")
		require.Greater(t, nesting, 10000, fmt.Sprintf("accepted invalid JSON %q", doc))
	}
}
