package jsonstream

import (
	"unicode/utf16"
	"unicode/utf8"
)

// strDecoder incrementally decodes the contents of a JSON string exactly like
// encoding/json does (invalid UTF-8 bytes and unpaired surrogates become
// U+FFFD), holding back anything that may still change with the next bytes:
// an incomplete UTF-8 sequence or a high surrogate that may be followed by
// its low half.
type strDecoder struct {
	hi   rune    // pending high surrogate from a \u escape, 0 if none
	pend [4]byte // pending raw bytes of an incomplete UTF-8 sequence
	np   int
}

func (d *strDecoder) reset() { d.hi, d.np = 0, 0 }

// flushHi resolves a pending high surrogate that turned out to be unpaired.
func (d *strDecoder) flushHi(dst []byte) []byte {
	if d.hi != 0 {
		d.hi = 0
		dst = utf8.AppendRune(dst, utf8.RuneError)
	}
	return dst
}

// drain decodes the pending raw bytes. Unless final, it stops at an
// incomplete (but possibly valid) sequence that more bytes could complete.
func (d *strDecoder) drain(dst []byte, final bool) []byte {
	for d.np > 0 && (final || utf8.FullRune(d.pend[:d.np])) {
		r, size := utf8.DecodeRune(d.pend[:d.np])
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, d.pend[:size]...)
		}
		copy(d.pend[:], d.pend[size:d.np])
		d.np -= size
	}
	return dst
}

// raw decodes a run of unescaped string bytes (no '"', '\\' or control
// characters).
func (d *strDecoder) raw(dst []byte, s string) []byte {
	dst = d.flushHi(dst)
	for d.np > 0 && len(s) > 0 {
		d.pend[d.np] = s[0]
		d.np++
		s = s[1:]
		dst = d.drain(dst, false)
	}
	for len(s) > 0 {
		k := 0
		for k < len(s) && s[k] < utf8.RuneSelf {
			k++
		}
		dst = append(dst, s[:k]...)
		s = s[k:]
		if len(s) == 0 {
			break
		}
		if !utf8.FullRuneInString(s) {
			// Incomplete sequence at the end of the run: it may be completed
			// by the next piece.
			d.np = copy(d.pend[:], s)
			break
		}
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, s[:size]...)
		}
		s = s[size:]
	}
	return dst
}

// escape decodes a single-character escape (\n, \", ...); c is the decoded
// byte.
func (d *strDecoder) escape(dst []byte, c byte) []byte {
	return append(d.flushHi(dst), c)
}

// unicode decodes a \uXXXX escape, pairing surrogates like encoding/json.
func (d *strDecoder) unicode(dst []byte, r rune) []byte {
	if d.hi != 0 {
		if r >= 0xDC00 && r < 0xE000 {
			dst = utf8.AppendRune(dst, utf16.DecodeRune(d.hi, r))
			d.hi = 0
			return dst
		}
		dst = d.flushHi(dst)
	}
	switch {
	case r >= 0xD800 && r < 0xDC00:
		d.hi = r
	case r >= 0xDC00 && r < 0xE000:
		dst = utf8.AppendRune(dst, utf8.RuneError)
	default:
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

// end resolves everything pending at the closing quote.
func (d *strDecoder) end(dst []byte) []byte {
	return d.drain(d.flushHi(dst), true)
}
