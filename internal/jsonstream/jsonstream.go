package jsonstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Mode selects how updates for a declared field path are reported.
type Mode string

const (
	// Set reports the value at the path (any JSON type) once it completes.
	Set Mode = "set"
	// Append reports each item of the array at the path once the item
	// completes.
	Append Mode = "append"
	// TextDelta reports the decoded characters of the string at the path as
	// they arrive.
	TextDelta Mode = "text-delta"
)

// Event is one partial update, in the order the input produced them.
type Event struct {
	Kind Mode
	// Path is the concrete dotted path, e.g. "items.0.name" (wildcards
	// resolved; array indexes in decimal).
	Path string
	// Value is the completed value for Set (compact JSON: the input bytes
	// without insignificant whitespace).
	Value json.RawMessage
	// Items are, for Append, the items of the array at Path completed since
	// the last event (compact JSON each).
	Items []json.RawMessage
	// Delta is, for TextDelta, the newly decoded characters of the string at
	// Path. It is never empty.
	Delta string
}

// SyntaxError reports malformed JSON inside the root object.
type SyntaxError struct {
	// Offset is the byte offset of the offending byte in the whole input
	// (all pieces written so far, skipped prefix included).
	Offset int64
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("jsonstream: %s at offset %d", e.Msg, e.Offset)
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("jsonstream: write after close")

type state uint8

const (
	stPrefix        state = iota // skipping text before the root '{'
	stObjKeyOrEnd                // after '{': key or '}'
	stObjKey                     // after ',' in an object: key
	stColon                      // after a key: ':'
	stValue                      // after ':' or ',' in an array: a value
	stArrValueOrEnd              // after '[': a value or ']'
	stAfterValue                 // after a value: ',' or the closing bracket
	stString                     // inside a string (key or value)
	stEscape                     // after '\' in a string
	stUnicode                    // inside \uXXXX
	stNumber                     // inside a number
	stLiteral                    // inside true / false / null
	stDone                       // root object closed; the rest is ignored
)

// numState is the position inside a JSON number.
type numState uint8

const (
	numMinus numState = iota // after '-'
	numZero                  // after a leading '0'
	numInt                   // in integer digits
	numDot                   // after '.'
	numFrac                  // in fraction digits
	numE                     // after 'e' / 'E'
	numESign                 // after the exponent sign
	numExp                   // in exponent digits
)

// valueCtx is what is tracked for a value being parsed.
type valueCtx struct {
	modes     modeSet
	capturing bool // its raw text is recorded (Set, or item of an Append array)
	capStart  int  // offset of its first byte in Extractor.capture
	path      string
	hasPath   bool
}

// frame is an open object or array.
type frame struct {
	valueCtx
	array bool
	ds    *dstate // matching state of this container; nil: nothing below matches
	// decodeKeys: this is an object whose keys are needed (for matching and
	// for the paths of events below it).
	decodeKeys bool
	index      int     // array: index of the current element
	base       int     // object: offset in arena where its current key starts
	keyEnd     int     // object: end of its current key in arena
	childDS    *dstate // object: matching state of the current key's value
}

// Extractor turns a streamed JSON object into partial update events for the
// declared field paths. It is a single-pass incremental state machine: every
// input byte is examined a bounded number of times, whatever the chunking.
// An Extractor is not safe for concurrent use.
type Extractor struct {
	m      *matcher
	state  state
	frames []frame
	cur    valueCtx // the scalar value being parsed

	// String state.
	inKey    bool
	decoding bool // decode the current string (key needed, or text-delta)
	strDelta bool // the current value string streams text-deltas
	dec      strDecoder
	hex      rune
	hexN     int

	num    numState
	lit    string
	litPos int

	arena     []byte // decoded keys of the open objects that need them
	delta     []byte // decoded text not yet emitted
	capture   []byte // raw text of the values being captured
	recording int    // number of values being captured
	scratch   [24]byte
	pathBuf   []byte
	lastSet   map[string]string // last Set value per concrete path (dedupe)

	out    []Event
	off    int64 // bytes written before the current piece
	err    error
	closed bool

	// Work counters, for tests: bytes consumed and dispatch steps.
	scanned int64
	steps   int64
}

// New validates the declared fields and returns an Extractor. Each key is a
// path of dot-separated segments: object keys, decimal array indexes
// ("items.0") or "*" matching any single key or index. Empty paths, empty
// segments and unknown modes are rejected.
func New(fields map[string]Mode) (*Extractor, error) {
	m, err := newMatcher(fields)
	if err != nil {
		return nil, err
	}
	return &Extractor{m: m, lastSet: map[string]string{}}, nil
}

// Complete reports whether the root object has closed.
func (e *Extractor) Complete() bool { return e.state == stDone }

// Close ends the input and returns the events that only complete at end of
// input. Since the root is always an object, every value inside it is
// terminated by a delimiter, so no value completes at end of input: a value
// cut off by the end of input (e.g. the 12 of `{"n":12`) is never reported,
// as it may be truncated. Close returns the error of a failed extractor;
// a truncated input is not an error — check Complete.
func (e *Extractor) Close() ([]Event, error) {
	if e.err != nil {
		return nil, e.err
	}
	e.closed = true
	return nil, nil
}

var plain [256]bool // bytes that may appear unescaped in a string run

func init() {
	for c := 0x20; c < 256; c++ {
		plain[c] = c != '"' && c != '\\'
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Write feeds the next piece of output and returns the events it completed.
// Text before the first '{' is skipped and text after the root object closes
// is ignored. Pieces may split the input anywhere. On malformed JSON it
// returns the events completed before the error together with a
// *SyntaxError, and the Extractor stays failed.
func (e *Extractor) Write(piece string) ([]Event, error) {
	if e.err != nil {
		return nil, e.err
	}
	if e.closed {
		return nil, ErrClosed
	}
	e.out = nil
	i, n := 0, len(piece)
	for i < n {
		e.steps++
		start := i
		switch e.state {
		case stPrefix:
			j := strings.IndexByte(piece[i:], '{')
			if j < 0 {
				i = n
				break
			}
			i += j + 1
			ds := e.m.start
			e.frames = append(e.frames, frame{ds: ds, decodeKeys: !ds.leaf})
			e.state = stObjKeyOrEnd

		case stDone:
			i = n

		case stString:
			j := i
			for j < n && plain[piece[j]] {
				j++
			}
			if j > i {
				run := piece[i:j]
				if e.recording > 0 {
					e.capture = append(e.capture, run...)
				}
				if e.decoding {
					p := e.dst()
					*p = e.dec.raw(*p, run)
				}
				i = j
				break
			}
			c := piece[i]
			switch c {
			case '"':
				i++
				e.record(c)
				e.endString()
			case '\\':
				i++
				e.record(c)
				if e.decoding {
					p := e.dst()
					*p = e.dec.drain(*p, true)
				}
				e.state = stEscape
			default:
				return e.fail(i, "invalid control character %s in string", quoteByte(c))
			}

		case stEscape:
			c := piece[i]
			var d byte
			switch c {
			case '"', '\\', '/':
				d = c
			case 'b':
				d = '\b'
			case 'f':
				d = '\f'
			case 'n':
				d = '\n'
			case 'r':
				d = '\r'
			case 't':
				d = '\t'
			case 'u':
				e.hex, e.hexN = 0, 0
				e.state = stUnicode
			default:
				return e.fail(i, "invalid escape character %s in string", quoteByte(c))
			}
			i++
			e.record(c)
			if c != 'u' {
				if e.decoding {
					p := e.dst()
					*p = e.dec.escape(*p, d)
				}
				e.state = stString
			}

		case stUnicode:
			c := piece[i]
			var h rune
			switch {
			case c >= '0' && c <= '9':
				h = rune(c - '0')
			case c >= 'a' && c <= 'f':
				h = rune(c - 'a' + 10)
			case c >= 'A' && c <= 'F':
				h = rune(c - 'A' + 10)
			default:
				return e.fail(i, "invalid character %s in \\u escape", quoteByte(c))
			}
			i++
			e.record(c)
			e.hex = e.hex<<4 | h
			e.hexN++
			if e.hexN == 4 {
				if e.decoding {
					p := e.dst()
					*p = e.dec.unicode(*p, e.hex)
				}
				e.state = stString
			}

		case stNumber:
			c := piece[i]
			if e.numByte(c) {
				i++
				e.record(c)
				break
			}
			switch e.num {
			case numZero, numInt, numFrac, numExp:
				// The number ended; c is handled in stAfterValue.
				e.valueDone(&e.cur)
			default:
				return e.fail(i, "invalid character %s in number", quoteByte(c))
			}

		case stLiteral:
			c := piece[i]
			if c != e.lit[e.litPos] {
				return e.fail(i, "invalid character %s in literal %s", quoteByte(c), e.lit)
			}
			i++
			e.record(c)
			e.litPos++
			if e.litPos == len(e.lit) {
				e.valueDone(&e.cur)
			}

		default: // structural states
			c := piece[i]
			if isSpace(c) {
				i++
				break
			}
			switch e.state {
			case stObjKeyOrEnd, stObjKey:
				switch {
				case c == '"':
					i++
					e.startKey()
				case c == '}' && e.state == stObjKeyOrEnd:
					i++
					e.closeContainer(c)
				default:
					return e.fail(i, "invalid character %s looking for object key string", quoteByte(c))
				}
			case stColon:
				if c != ':' {
					return e.fail(i, "invalid character %s after object key", quoteByte(c))
				}
				i++
				e.record(c)
				e.state = stValue
			case stValue, stArrValueOrEnd:
				if c == ']' && e.state == stArrValueOrEnd {
					i++
					e.closeContainer(c)
					break
				}
				if !e.startValue(c) {
					return e.fail(i, "invalid character %s looking for beginning of value", quoteByte(c))
				}
				i++
			case stAfterValue:
				top := &e.frames[len(e.frames)-1]
				switch {
				case c == ',':
					i++
					e.record(c)
					if top.array {
						e.state = stValue
					} else {
						e.state = stObjKey
					}
				case c == ']' && top.array, c == '}' && !top.array:
					i++
					e.closeContainer(c)
				case top.array:
					return e.fail(i, "invalid character %s after array element", quoteByte(c))
				default:
					return e.fail(i, "invalid character %s after object key:value pair", quoteByte(c))
				}
			}
		}
		e.scanned += int64(i - start)
	}
	e.off += int64(n)
	e.flushDelta()
	out := e.out
	e.out = nil
	return out, nil
}

func (e *Extractor) fail(pos int, format string, args ...any) ([]Event, error) {
	e.flushDelta()
	e.err = &SyntaxError{Offset: e.off + int64(pos), Msg: fmt.Sprintf(format, args...)}
	out := e.out
	e.out = nil
	return out, e.err
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		if c == '\'' {
			return `'\''`
		}
		return "'" + string(rune(c)) + "'"
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// record appends a significant byte to the capture buffer while a value is
// being captured.
func (e *Extractor) record(c byte) {
	if e.recording > 0 {
		e.capture = append(e.capture, c)
	}
}

// dst is where the current string decodes to.
func (e *Extractor) dst() *[]byte {
	if e.inKey {
		return &e.arena
	}
	return &e.delta
}

func (e *Extractor) numByte(c byte) bool {
	digit := c >= '0' && c <= '9'
	switch e.num {
	case numMinus:
		switch {
		case c == '0':
			e.num = numZero
		case digit:
			e.num = numInt
		default:
			return false
		}
	case numZero, numInt:
		switch {
		case digit && e.num == numInt:
		case c == '.':
			e.num = numDot
		case c == 'e' || c == 'E':
			e.num = numE
		default:
			return false
		}
	case numDot, numFrac:
		switch {
		case digit:
			e.num = numFrac
		case (c == 'e' || c == 'E') && e.num == numFrac:
			e.num = numE
		default:
			return false
		}
	case numE:
		switch {
		case c == '+' || c == '-':
			e.num = numESign
		case digit:
			e.num = numExp
		default:
			return false
		}
	case numESign, numExp:
		if !digit {
			return false
		}
		e.num = numExp
	}
	return true
}

func (e *Extractor) startKey() {
	f := &e.frames[len(e.frames)-1]
	e.record('"')
	e.inKey = true
	e.decoding = f.decodeKeys
	if e.decoding {
		e.arena = e.arena[:f.base]
		e.dec.reset()
	}
	e.state = stString
}

func (e *Extractor) endString() {
	if e.decoding {
		p := e.dst()
		*p = e.dec.end(*p)
	}
	if e.inKey {
		e.inKey = false
		f := &e.frames[len(e.frames)-1]
		if f.decodeKeys {
			f.keyEnd = len(e.arena)
			f.childDS = e.m.step(f.ds, e.arena[f.base:f.keyEnd])
		} else {
			f.childDS = nil
		}
		e.state = stColon
		return
	}
	e.flushDelta()
	e.strDelta = false
	e.valueDone(&e.cur)
}

// startValue begins the value whose first byte is c; it reports false if c
// cannot start a value.
func (e *Extractor) startValue(c byte) bool {
	f := &e.frames[len(e.frames)-1]
	var ds *dstate
	parentAppend := false
	base := f.base
	if f.array {
		ds = e.m.stepIndex(f.ds, f.index, e.scratch[:])
		parentAppend = f.modes&bitAppend != 0
	} else {
		ds = f.childDS
		if f.decodeKeys {
			base = f.keyEnd
		}
	}
	var ctx valueCtx
	if ds != nil {
		ctx.modes = ds.modes
	}
	if ctx.modes&bitSet != 0 || parentAppend {
		ctx.capturing = true
		ctx.capStart = len(e.capture)
	}
	switch c {
	case '{', '[':
		nf := frame{valueCtx: ctx, array: c == '[', ds: ds, base: base}
		nf.decodeKeys = !nf.array && ds != nil && !ds.leaf
		e.frames = append(e.frames, nf)
		if c == '{' {
			e.state = stObjKeyOrEnd
		} else {
			e.state = stArrValueOrEnd
		}
	case '"':
		e.cur = ctx
		e.strDelta = ctx.modes&bitTextDelta != 0
		e.decoding = e.strDelta
		e.dec.reset()
		e.delta = e.delta[:0]
		e.state = stString
	case '-':
		e.cur, e.num, e.state = ctx, numMinus, stNumber
	case '0':
		e.cur, e.num, e.state = ctx, numZero, stNumber
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		e.cur, e.num, e.state = ctx, numInt, stNumber
	case 't':
		e.cur, e.lit, e.litPos, e.state = ctx, "true", 1, stLiteral
	case 'f':
		e.cur, e.lit, e.litPos, e.state = ctx, "false", 1, stLiteral
	case 'n':
		e.cur, e.lit, e.litPos, e.state = ctx, "null", 1, stLiteral
	default:
		return false
	}
	if ctx.capturing {
		e.recording++
	}
	e.record(c)
	return true
}

func (e *Extractor) closeContainer(c byte) {
	e.record(c)
	f := e.frames[len(e.frames)-1]
	e.frames = e.frames[:len(e.frames)-1]
	if len(e.frames) == 0 {
		e.state = stDone
		return
	}
	e.valueDone(&f.valueCtx)
}

// valueDone emits the events of a completed value (the scalar in e.cur or a
// just-popped container) and returns to its parent container.
func (e *Extractor) valueDone(v *valueCtx) {
	pi := len(e.frames) - 1
	p := &e.frames[pi]
	if v.capturing {
		raw := e.capture[v.capStart:]
		if v.modes&bitSet != 0 {
			path := e.pathOf(v, pi)
			if last, ok := e.lastSet[path]; !ok || last != string(raw) {
				s := string(raw)
				e.lastSet[path] = s
				e.out = append(e.out, Event{Kind: Set, Path: path, Value: json.RawMessage(s)})
			}
		}
		if p.array && p.modes&bitAppend != 0 {
			item := json.RawMessage(string(raw))
			path := e.pathOf(&p.valueCtx, pi-1)
			if k := len(e.out) - 1; k >= 0 && e.out[k].Kind == Append && e.out[k].Path == path {
				e.out[k].Items = append(e.out[k].Items, item)
			} else {
				e.out = append(e.out, Event{Kind: Append, Path: path, Items: []json.RawMessage{item}})
			}
		}
		e.recording--
		if e.recording == 0 {
			e.capture = e.capture[:0]
		}
	}
	if p.array {
		p.index++
	}
	e.state = stAfterValue
}

// flushDelta emits the text decoded so far for a text-delta string.
func (e *Extractor) flushDelta() {
	if !e.strDelta || len(e.delta) == 0 {
		return
	}
	path := e.pathOf(&e.cur, len(e.frames)-1)
	e.out = append(e.out, Event{Kind: TextDelta, Path: path, Delta: string(e.delta)})
	e.delta = e.delta[:0]
}

// pathOf returns (and caches) the path of a value whose parent is
// e.frames[parent]. It costs O(len(path)) once per value, and is only called
// for values that produce events (which carry the path).
func (e *Extractor) pathOf(v *valueCtx, parent int) string {
	if v.hasPath {
		return v.path
	}
	b := e.pathBuf[:0]
	for k := 0; k <= parent; k++ {
		if k > 0 {
			b = append(b, '.')
		}
		f := &e.frames[k]
		if f.array {
			b = strconv.AppendInt(b, int64(f.index), 10)
		} else {
			b = append(b, e.arena[f.base:f.keyEnd]...)
		}
	}
	e.pathBuf = b
	v.path, v.hasPath = string(b), true
	return v.path
}
