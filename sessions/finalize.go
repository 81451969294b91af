package sessions

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
)

// Status is the outcome of a chat response, as given to the response-finalized lifecycle hook
// (spec F6.7): "completed", "failed", "cancelled" or "interrupted".
type Status string

// The response statuses.
const (
	StatusCompleted   Status = "completed"
	StatusFailed      Status = "failed"
	StatusCancelled   Status = "cancelled"
	StatusInterrupted Status = "interrupted"
)

// The content piece types.
const (
	pieceText       = "text"
	pieceStructured = "structured"
	pieceInterrupt  = "interrupt"
	pieceError      = "error"
)

// FinalizedMessage is the normalized assistant message of one chat response (spec F6.7,
// FinalizedChatMessage): what an application stores in its server-owned transcript. It is
// not the chunk array nor the buffered result ([Buffered]).
//
// An interrupt piece holds the resume token of the pending request: protect transcript reads
// as carefully as the run itself.
type FinalizedMessage struct {
	ID                  string         `json:"id"`      // "<clientTurnId>:assistant"
	Role                string         `json:"role"`    // "assistant"
	Content             string         `json:"content"` // the text pieces joined (see Finalize)
	ContentPieces       []ContentPiece `json:"contentPieces"`
	CheckpointID        string         `json:"checkpointId,omitempty"`
	CheckpointTurnIndex *int           `json:"checkpointTurnIndex,omitempty"`
}

// ContentPiece is one piece of a [FinalizedMessage]: a tagged union whose Type is
// "text", "structured", "interrupt" or "error". Only the fields of its
// type are set, and only those are encoded (see [ContentPiece.MarshalJSON]).
type ContentPiece struct {
	Type string `json:"type"`
	ID   string `json:"id"`

	// text, error: the text, or the error's message.
	Content string `json:"content,omitempty"`

	// structured: the reduced stream.
	Data *StructuredState `json:"data,omitempty"`

	// interrupt: the pending request (its resume token and request id) and the question asked.
	ResumeToken   string                  `json:"resumeToken,omitempty"`
	RequestID     string                  `json:"requestId,omitempty"`
	Kind          contracts.InterruptKind `json:"kind,omitempty"`
	Question      string                  `json:"question,omitempty"`
	Multiple      bool                    `json:"multiple,omitempty"`
	Options       []contracts.Option      `json:"options,omitempty"`
	SchemaID      string                  `json:"schemaId,omitempty"`
	SchemaVersion string                  `json:"schemaVersion,omitempty"`
	Contract      string                  `json:"contract,omitempty"`
	Request       json.RawMessage         `json:"request,omitempty"`
	InterruptID   string                  `json:"interruptId,omitempty"` // the hook id
	Meta          json.RawMessage         `json:"meta,omitempty"`

	// error: the failure descriptor, when the error chunk has one.
	Failure *contracts.Failure `json:"failure,omitempty"`
}

// MarshalJSON encodes the fields of the piece's type only: text {type, id, content};
// structured {type, id, data}; interrupt {type, id, resumeToken, requestId, kind, question?,
// multiple, options, schemaId?, schemaVersion?, contract?, request?, interruptId?, meta?};
// error {type, id, content, failure?}. A piece of another type encodes every non-empty field.
// Decoding needs no method: the field names are the same.
func (p ContentPiece) MarshalJSON() ([]byte, error) {
	switch p.Type {
	case pieceText:
		return json.Marshal(struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Content string `json:"content"`
		}{p.Type, p.ID, p.Content})
	case pieceStructured:
		return json.Marshal(struct {
			Type string           `json:"type"`
			ID   string           `json:"id"`
			Data *StructuredState `json:"data"`
		}{p.Type, p.ID, p.Data})
	case pieceInterrupt:
		opts := p.Options
		if opts == nil {
			opts = []contracts.Option{}
		}
		return json.Marshal(struct {
			Type          string                  `json:"type"`
			ID            string                  `json:"id"`
			ResumeToken   string                  `json:"resumeToken"`
			RequestID     string                  `json:"requestId"`
			Kind          contracts.InterruptKind `json:"kind"`
			Question      string                  `json:"question,omitempty"`
			Multiple      bool                    `json:"multiple"`
			Options       []contracts.Option      `json:"options"`
			SchemaID      string                  `json:"schemaId,omitempty"`
			SchemaVersion string                  `json:"schemaVersion,omitempty"`
			Contract      string                  `json:"contract,omitempty"`
			Request       json.RawMessage         `json:"request,omitempty"`
			InterruptID   string                  `json:"interruptId,omitempty"`
			Meta          json.RawMessage         `json:"meta,omitempty"`
		}{p.Type, p.ID, p.ResumeToken, p.RequestID, p.Kind, p.Question, p.Multiple, opts,
			p.SchemaID, p.SchemaVersion, p.Contract, p.Request, p.InterruptID, p.Meta})
	case pieceError:
		return json.Marshal(struct {
			Type    string             `json:"type"`
			ID      string             `json:"id"`
			Content string             `json:"content"`
			Failure *contracts.Failure `json:"failure,omitempty"`
		}{p.Type, p.ID, p.Content, p.Failure})
	}
	type plain ContentPiece // without the method
	return json.Marshal(plain(p))
}

// Finalize builds the finalized assistant message of one chat response and its status (spec
// F6.7), from the response's chunks. It reads chunks up to and including the first done
// chunk: whatever follows (work after the response was completed) does not change the
// message.
//
// The message's ID is "<clientTurnID>:assistant" and its pieces come in the order in which
// they first appear:
//
//   - text {id: "<turn>:text:<key>"}: one piece per text stream key ([textKey]) holding its
//     accumulated deltas; the deltas of segments voided by text-invalidated chunks are left
//     out (as in [Buffer]), and pieces left empty are dropped;
//   - text {id: "<turn>:message:<i>"}: the content of the i-th message chunk (counting from
//     0), only if the response has no text-delta chunk at all; empty ones are dropped;
//   - structured {id: "<turn>:structured:<streamId>", data}: the stream reduced with
//     [applyStructured], updated in place by its later chunks. A chunk the reducer rejects
//     is skipped (the piece keeps its last good state; finalization never fails). A
//     structured-data-invalidated chunk removes the stream's piece; a later chunk of the same
//     stream starts it again, from an empty state, as a new piece at that later position;
//   - interrupt {id: "<turn>:interrupt:<requestId>"}: the request id and resume token of the
//     interrupt chunk and the question of its input ([contracts.InterruptInput]); schema id,
//     schema version, meta and interrupt id (the hook id) come from the input, else from the
//     chunk. An input that cannot be decoded leaves the question fields empty. A second
//     interrupt chunk with the same request id replaces the piece in place;
//   - error {id: "<turn>:error:<i>", content, failure}: the i-th error chunk (counting from
//     0), with its message (or its failure's, when the chunk has none).
//
// Other chunks make no piece: session, trace, status, text-start, text-end, tool-call-*,
// tool-result, transition, limit-reached, resume-rejected (the run keeps waiting for the
// same request), checkpoint and done.
//
// Content is the text pieces joined: text-delta pieces with the boundary rule of [Buffer]
// (one space where neither side has whitespace), message pieces with [messageSeparator]; so
// it equals [Buffered.Text] unless the deltas of different streams interleave.
// CheckpointID and CheckpointTurnIndex come from the (last) checkpoint chunk. ContentPieces
// is never nil (it encodes as [] when empty).
//
// The status is, by precedence: "cancelled" if the response has a cancelled chunk,
// "failed" if it has an error chunk, "interrupted" if it has an interrupt chunk,
// else "completed". A run that ended (cancelled or failed) is not waiting for an
// answer anymore, whatever it asked before.
func Finalize(clientTurnID string, chunks []contracts.Chunk) (FinalizedMessage, Status) {
	for i, c := range chunks {
		if c.Type == contracts.ChunkDone {
			chunks = chunks[:i+1]
			break
		}
	}
	voided := voidedSegments(chunks)
	sawDelta := false
	for _, c := range chunks {
		if c.Type == contracts.ChunkTextDelta {
			sawDelta = true
			break
		}
	}

	msg := FinalizedMessage{ID: clientTurnID + ":assistant", Role: "assistant"}
	id := func(kind, suffix string) string { return clientTurnID + ":" + kind + ":" + suffix }
	var (
		slots       []*ContentPiece // pieces in order; nil once removed
		texts       = map[string]int{}
		textBufs    = map[int]*strings.Builder{}
		streams     = map[string]int{}
		interrupts  = map[string]int{}
		nMessages   int
		nErrors     int
		interrupted bool
		failed      bool
		cancelled   bool
	)
	add := func(p *ContentPiece) int {
		slots = append(slots, p)
		return len(slots) - 1
	}
	for _, c := range chunks {
		switch c.Type {
		case contracts.ChunkTextDelta:
			if voided.has(c) || c.Delta == "" {
				continue
			}
			key := textKey(c)
			i, ok := texts[key]
			if !ok {
				i = add(&ContentPiece{Type: pieceText, ID: id("text", key)})
				texts[key] = i
				textBufs[i] = &strings.Builder{}
			}
			textBufs[i].WriteString(c.Delta)
		case contracts.ChunkMessage:
			n := nMessages
			nMessages++
			if !sawDelta && c.Content != "" {
				add(&ContentPiece{Type: pieceText, ID: id("message", strconv.Itoa(n)), Content: c.Content})
			}
		case contracts.ChunkStructuredData:
			i, ok := streams[c.StreamID]
			var prev *StructuredState
			if ok {
				prev = slots[i].Data
			}
			st, err := applyStructured(prev, c)
			if err != nil {
				continue // a malformed chunk is skipped; the stream keeps its last good state
			}
			if ok {
				slots[i].Data = st
			} else {
				streams[c.StreamID] = add(&ContentPiece{Type: pieceStructured, ID: id("structured", c.StreamID), Data: st})
			}
		case contracts.ChunkStructuredInvalidated:
			if i, ok := streams[c.StreamID]; ok {
				slots[i] = nil
				delete(streams, c.StreamID)
			}
		case contracts.ChunkInterrupt:
			interrupted = true
			p := interruptPiece(c)
			p.ID = id("interrupt", c.RequestID)
			if i, ok := interrupts[c.RequestID]; ok {
				slots[i] = p
			} else {
				interrupts[c.RequestID] = add(p)
			}
		case contracts.ChunkError:
			failed = true
			content := c.Message
			var f *contracts.Failure
			if c.Failure != nil {
				fc := *c.Failure
				f = &fc
				if content == "" {
					content = f.Message
				}
			}
			add(&ContentPiece{Type: pieceError, ID: id("error", strconv.Itoa(nErrors)), Content: content, Failure: f})
			nErrors++
		case contracts.ChunkCancelled:
			cancelled = true
		case contracts.ChunkCheckpoint:
			msg.CheckpointID = c.ID
			msg.CheckpointTurnIndex = nil
			if c.TurnIndex != nil {
				n := *c.TurnIndex
				msg.CheckpointTurnIndex = &n
			}
		}
	}

	msg.ContentPieces = []ContentPiece{}
	var content textJoiner
	var messages []string
	for i, p := range slots {
		if p == nil {
			continue
		}
		if buf, ok := textBufs[i]; ok {
			p.Content = buf.String()
			if p.Content == "" {
				continue
			}
			content.add(p.ID, p.Content)
		} else if p.Type == pieceText {
			messages = append(messages, p.Content)
		}
		msg.ContentPieces = append(msg.ContentPieces, *p)
	}
	if sawDelta {
		msg.Content = content.String()
	} else {
		msg.Content = strings.Join(messages, messageSeparator)
	}

	status := StatusCompleted
	switch {
	case cancelled:
		status = StatusCancelled
	case failed:
		status = StatusFailed
	case interrupted:
		status = StatusInterrupted
	}
	return msg, status
}

// interruptPiece is the interrupt piece of an interrupt chunk (without its id).
func interruptPiece(c contracts.Chunk) *ContentPiece {
	var in contracts.InterruptInput
	if len(c.Input) > 0 {
		if err := json.Unmarshal(c.Input, &in); err != nil {
			in = contracts.InterruptInput{}
		}
	}
	or := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	meta := in.Meta
	if len(meta) == 0 {
		meta = c.Meta
	}
	return &ContentPiece{
		Type:          pieceInterrupt,
		ResumeToken:   c.ResumeToken,
		RequestID:     c.RequestID,
		Kind:          in.Kind,
		Question:      in.Question,
		Multiple:      in.Multiple,
		Options:       in.Options,
		SchemaID:      or(in.SchemaID, c.SchemaID),
		SchemaVersion: or(in.SchemaVersion, c.SchemaVersion),
		Contract:      in.Contract,
		Request:       in.Request,
		InterruptID:   or(in.ID, c.ID),
		Meta:          meta,
	}
}
