package sessions

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kortyx-go/kortyx/contracts"
)

// Buffered is the buffered result of a chat response (spec F6.5: the body of a stream:false
// request).
type Buffered struct {
	// Chunks are all the chunks, as given.
	Chunks []contracts.Chunk `json:"chunks"`
	// Text is the visible text of the response (see [Buffer]).
	Text string `json:"text"`
	// Structured are the structured-data chunks, in order (not reduced: see [applyStructured]).
	Structured []contracts.Chunk `json:"structured"`
}

// messageSeparator joins the contents of message chunks in [Buffered.Text] and
// [FinalizedMessage.Content] when a response has no text-delta.
const messageSeparator = "\n"

// Buffer builds the buffered result of a response's chunks (spec F6.5).
//
// Text is the concatenation of the text-delta deltas. When the text stream key of a delta
// (see [textKey]) differs from the previous delta's and neither the text so far ends nor the
// delta starts with whitespace, one space is inserted between them, so that the texts of two
// segments do not run together ("Hello" + "world" → "Hello world", "Hello " + "world" →
// "Hello world"). The deltas of a segment voided by a text-invalidated chunk (same OpID and
// SegmentID; this port's extension) are left out, whether they come before or after it. If
// the chunks hold no text-delta at all, Text is the non-empty contents of the message chunks
// joined with [messageSeparator].
//
// Chunks and Structured are never nil (they encode as [] when empty).
func Buffer(chunks []contracts.Chunk) Buffered {
	b := Buffered{Chunks: slices.Clone(chunks), Structured: []contracts.Chunk{}}
	if b.Chunks == nil {
		b.Chunks = []contracts.Chunk{}
	}
	voided := voidedSegments(chunks)
	var text textJoiner
	var messages []string
	sawDelta := false
	for _, c := range chunks {
		switch c.Type {
		case contracts.ChunkTextDelta:
			sawDelta = true
			if !voided.has(c) {
				text.add(textKey(c), c.Delta)
			}
		case contracts.ChunkMessage:
			if c.Content != "" {
				messages = append(messages, c.Content)
			}
		case contracts.ChunkStructuredData:
			b.Structured = append(b.Structured, c)
		}
	}
	if sawDelta {
		b.Text = text.String()
	} else {
		b.Text = strings.Join(messages, messageSeparator)
	}
	return b
}

// textKey is the text stream key of a text chunk (spec F6.5): "opId:segmentId" when both are
// set, else the first non-empty of SegmentID, OpID, ID and Node ("" when none is).
func textKey(c contracts.Chunk) string {
	switch {
	case c.OpID != "" && c.SegmentID != "":
		return c.OpID + ":" + c.SegmentID
	case c.SegmentID != "":
		return c.SegmentID
	case c.OpID != "":
		return c.OpID
	case c.ID != "":
		return c.ID
	}
	return c.Node
}

// segmentRef names one text segment of one operation.
type segmentRef struct{ op, seg string }

// voidSet holds the segments voided by text-invalidated chunks.
type voidSet map[segmentRef]bool

// voidedSegments collects the segments voided in chunks. A text-invalidated chunk without
// SegmentID voids nothing.
func voidedSegments(chunks []contracts.Chunk) voidSet {
	var v voidSet
	for _, c := range chunks {
		if c.Type == contracts.ChunkTextInvalidated && c.SegmentID != "" {
			if v == nil {
				v = voidSet{}
			}
			v[segmentRef{c.OpID, c.SegmentID}] = true
		}
	}
	return v
}

// has reports whether the text chunk c belongs to a voided segment.
func (v voidSet) has(c contracts.Chunk) bool {
	return c.SegmentID != "" && v[segmentRef{c.OpID, c.SegmentID}]
}

// needsSpace reports whether a space goes between prev and next, texts of different streams:
// when both are non-empty and neither has whitespace at the boundary.
func needsSpace(prev, next string) bool {
	if prev == "" || next == "" {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(prev)
	first, _ := utf8.DecodeRuneInString(next)
	return !unicode.IsSpace(last) && !unicode.IsSpace(first)
}

// textJoiner concatenates keyed texts, inserting a space where the key changes (see Buffer).
type textJoiner struct {
	b       strings.Builder
	lastKey string
	tail    string // the last text added
}

func (j *textJoiner) add(key, s string) {
	if s == "" {
		return
	}
	if j.b.Len() > 0 && key != j.lastKey && needsSpace(j.tail, s) {
		j.b.WriteByte(' ')
	}
	j.b.WriteString(s)
	j.lastKey, j.tail = key, s
}

func (j *textJoiner) String() string { return j.b.String() }
