package jsonstream

import (
	"fmt"
	"strings"
	"testing"
)

// benchDoc is a ~64 KB model output: a fenced object with a long escaped
// text, an array of records and some untracked data.
func benchDoc() string {
	var b strings.Builder
	b.WriteString("```json\n{\"subject\":\"Quarterly report\",\"body\":\"")
	for b.Len() < 24<<10 {
		b.WriteString(`The quick brown fox \"jumps\" over the lazy dog.\nCafé – naïve 😀 \u00e9. `)
	}
	b.WriteString(`","bullets":[`)
	for i := 0; b.Len() < 48<<10; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"title":"Point %d","score":%d.5,"done":%t,"tags":["a","b"]}`, i, i, i%2 == 0)
	}
	b.WriteString(`],"meta":{"values":[`)
	for i := 0; b.Len() < 64<<10; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", i*7919)
	}
	b.WriteString("]}}\n```\n")
	return b.String()
}

// BenchmarkExtractor measures throughput for one-byte writes (a token per
// byte, the worst case), 64-byte writes and a single write, with fields that
// produce many events ("events") and with fields that match nothing, which
// measures the tokenizer alone ("scan").
func BenchmarkExtractor(b *testing.B) {
	doc := benchDoc()
	fieldSets := []struct {
		name   string
		fields map[string]Mode
	}{
		{"events", map[string]Mode{
			"subject":          Set,
			"body":             TextDelta,
			"bullets":          Append,
			"bullets.*.title":  TextDelta,
			"bullets.*.score":  Set,
			"meta.values.1000": Set,
		}},
		{"scan", map[string]Mode{"nothing.*": Set}},
	}
	for _, fs := range fieldSets {
		for _, size := range []int{1, 64, len(doc)} {
			name := fmt.Sprintf("%s/write=%d", fs.name, size)
			if size == len(doc) {
				name = fs.name + "/write=all"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(doc)))
				b.ReportAllocs()
				for b.Loop() {
					x, err := New(fs.fields)
					if err != nil {
						b.Fatal(err)
					}
					for i := 0; i < len(doc); i += size {
						if _, err := x.Write(doc[i:min(i+size, len(doc))]); err != nil {
							b.Fatal(err)
						}
					}
					if !x.Complete() {
						b.Fatal("incomplete")
					}
				}
			})
		}
	}
}
