package sessions

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
)

// txt is a text-delta of segment seg of operation op.
func txt(op, seg, d string) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkTextDelta, Node: "answer", OpID: op, SegmentID: seg, Delta: d}
}

func txtInvalidated(op, seg string) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkTextInvalidated, OpID: op, SegmentID: seg}
}

func msgChunk(content string) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkMessage, Node: "answer", Content: content}
}

func TestBufferText(t *testing.T) {
	keyed := func(id, node, d string) contracts.Chunk {
		return contracts.Chunk{Type: contracts.ChunkTextDelta, ID: id, Node: node, Delta: d}
	}
	tests := []struct {
		name   string
		chunks []contracts.Chunk
		want   string
	}{
		{"no chunks", nil, ""},
		{"one segment", []contracts.Chunk{txt("op1", "s1", "Hel"), txt("op1", "s1", "lo")}, "Hello"},
		{"two segments get a space", []contracts.Chunk{txt("op1", "s1", "Hello"), txt("op1", "s2", "world")}, "Hello world"},
		{"no double space after a trailing space", []contracts.Chunk{txt("op1", "s1", "Hello "), txt("op1", "s2", "world")}, "Hello world"},
		{"no double space before a leading space", []contracts.Chunk{txt("op1", "s1", "Hello"), txt("op1", "s2", " world")}, "Hello world"},
		{"a newline is whitespace", []contracts.Chunk{txt("op1", "s1", "Hello\n"), txt("op2", "s1", "world")}, "Hello\nworld"},
		{"unicode whitespace", []contracts.Chunk{txt("op1", "s1", "Hello\u00a0"), txt("op2", "s1", "world")}, "Hello\u00a0world"},
		{"punctuation of another segment is separated too", []contracts.Chunk{txt("op1", "s1", "Hello"), txt("op1", "s2", "!")}, "Hello !"},
		{"different operations", []contracts.Chunk{txt("op1", "", "Hello"), txt("op2", "", "world")}, "Hello world"},
		{"segment ids alone", []contracts.Chunk{txt("", "s1", "Hello"), txt("", "s2", "world")}, "Hello world"},
		{"hook ids", []contracts.Chunk{keyed("h1", "n", "Hello"), keyed("h2", "n", "world")}, "Hello world"},
		{"nodes", []contracts.Chunk{keyed("", "a", "Hello"), keyed("", "b", "world")}, "Hello world"},
		{"the same node", []contracts.Chunk{keyed("", "a", "Hel"), keyed("", "a", "lo")}, "Hello"},
		{"no key at all", []contracts.Chunk{keyed("", "", "Hel"), keyed("", "", "lo")}, "Hello"},
		{"back to an earlier key", []contracts.Chunk{txt("op1", "s1", "a"), txt("op1", "s2", "b"), txt("op1", "s1", "c")}, "a b c"},
		{"empty deltas are ignored", []contracts.Chunk{txt("op1", "s1", "Hello"), txt("op1", "s2", ""), txt("op1", "s1", "!")}, "Hello!"},
		{"a leading delta of a new key gets no space", []contracts.Chunk{txt("op1", "s1", "Hi")}, "Hi"},
		{"voided segment removed", []contracts.Chunk{
			txt("op1", "s1", "Hel"), txtInvalidated("op1", "s1"), txt("op1", "s1~2", "Hello"), txt("op2", "s1", "world"),
		}, "Hello world"},
		{"voided segment removed whatever the order", []contracts.Chunk{
			txt("op1", "s1", "Hel"), txt("op1", "s1~2", "Hello"), txt("op1", "s1", "p"), txtInvalidated("op1", "s1"),
		}, "Hello"},
		{"voiding is per operation", []contracts.Chunk{
			txt("op1", "s1", "Hello"), txt("op2", "s1", "there"), txtInvalidated("op2", "s1"), txt("op2", "s1~2", "world"),
		}, "Hello world"},
		{"an invalidation without segment voids nothing", []contracts.Chunk{
			txt("op1", "", "Hello"), txtInvalidated("op1", ""),
		}, "Hello"},
		{"messages when no text-delta", []contracts.Chunk{msgChunk("First."), msgChunk(""), msgChunk("Second.")}, "First.\nSecond."},
		{"messages ignored after text-delta", []contracts.Chunk{txt("op1", "s1", "Hello"), msgChunk("Done.")}, "Hello"},
		{"messages ignored even when all text is voided", []contracts.Chunk{txt("op1", "s1", "Hel"), txtInvalidated("op1", "s1"), msgChunk("Done.")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Buffer(tt.chunks).Text)
		})
	}
}

func TestBufferChunksAndStructured(t *testing.T) {
	s1 := contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: "a", DataType: "x", Kind: contracts.StructuredSet, Path: "p", Value: json.RawMessage(`1`)}
	s2 := contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: "b", DataType: "x", Kind: contracts.StructuredFinal, Data: json.RawMessage(`{}`)}
	inv := contracts.Chunk{Type: contracts.ChunkStructuredInvalidated, StreamID: "a"}
	chunks := []contracts.Chunk{
		{Type: contracts.ChunkSession, SessionID: "sess"},
		s1, txt("op1", "s1", "Hi"), inv, s2,
		{Type: contracts.ChunkDone},
	}
	b := Buffer(chunks)
	require.Equal(t, Buffered{Chunks: chunks, Text: "Hi", Structured: []contracts.Chunk{s1, s2}}, b)

	// The result does not alias the input slice.
	chunks[0].SessionID = "changed"
	require.Equal(t, "sess", b.Chunks[0].SessionID)
}

func TestBufferJSON(t *testing.T) {
	b, err := json.Marshal(Buffer(nil))
	require.NoError(t, err)
	require.JSONEq(t, `{"chunks":[],"text":"","structured":[]}`, string(b))

	b, err = json.Marshal(Buffer([]contracts.Chunk{msgChunk("Hi"), {Type: contracts.ChunkDone}}))
	require.NoError(t, err)
	require.JSONEq(t, `{"chunks":[{"type":"message","node":"answer","content":"Hi"},{"type":"done"}],"text":"Hi","structured":[]}`, string(b))
}

func TestTextKey(t *testing.T) {
	tests := []struct {
		name  string
		chunk contracts.Chunk
		want  string
	}{
		{"op and segment", contracts.Chunk{OpID: "op", SegmentID: "seg", ID: "h", Node: "n"}, "op:seg"},
		{"segment", contracts.Chunk{SegmentID: "seg", ID: "h", Node: "n"}, "seg"},
		{"op", contracts.Chunk{OpID: "op", ID: "h", Node: "n"}, "op"},
		{"hook id", contracts.Chunk{ID: "h", Node: "n"}, "h"},
		{"node", contracts.Chunk{Node: "n"}, "n"},
		{"none", contracts.Chunk{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, textKey(tt.chunk))
		})
	}
}

func ExampleBuffer() {
	b := Buffer([]contracts.Chunk{
		{Type: contracts.ChunkSession, SessionID: "sess-1"},
		{Type: contracts.ChunkTextDelta, OpID: "op1", SegmentID: "s1", Delta: "Hel"},
		// The model pass failed midway and was retried under segment "s1~2".
		{Type: contracts.ChunkTextInvalidated, OpID: "op1", SegmentID: "s1"},
		{Type: contracts.ChunkTextDelta, OpID: "op1", SegmentID: "s1~2", Delta: "Hello"},
		{Type: contracts.ChunkTextDelta, OpID: "op2", SegmentID: "s1", Delta: "world"},
		{Type: contracts.ChunkStructuredData, StreamID: "st1", DataType: "card", Kind: contracts.StructuredFinal,
			Data: json.RawMessage(`{"title":"Hi"}`)},
		{Type: contracts.ChunkDone},
	})
	fmt.Printf("%q\n", b.Text)
	fmt.Println(len(b.Chunks), "chunks,", len(b.Structured), "structured")
	// Output:
	// "Hello world"
	// 7 chunks, 1 structured
}
