// Package jsonstream extracts partial structured updates from a JSON object
// that a model streams token by token, for streamed output contracts.
//
// The caller declares field paths and how each is reported:
//
//   - [Set]: the value at the path (any JSON type), as compact JSON, when it
//     completes. A path completing again with an identical serialized value
//     (a repeated key) is reported once.
//   - [Append]: the items of the array at the path, each as compact JSON, as
//     they complete. Non-array values produce nothing.
//   - [TextDelta]: the decoded characters of the string at the path as they
//     arrive. Escapes are decoded like encoding/json does; half an escape,
//     a surrogate pair or a UTF-8 sequence split across writes is held back
//     until complete. Non-string values produce nothing.
//
// A path is made of dot-separated segments: object keys, decimal array
// indexes ("items.0") or "*", which matches any single key or index. Events
// carry the concrete path ("items.1.name"). Paths may nest: with "a" as Set
// and "a.b" as TextDelta, the deltas of a.b stream while it is parsed and the
// Set of a follows when a closes. Events come in the order the input
// completes them (an inner value before the value containing it). Keys are
// not escaped in paths, so a key containing '.' makes its path ambiguous.
//
// Each Write returns the events it completed. Text-delta characters decoded
// by a Write are returned by that Write, as one event per string; the items
// of an array completed by one Write may be merged into one Append event.
//
// Text before the first '{' (a markdown fence, prose) is skipped and text
// after the root object closes is ignored. Inside the root object the input
// must be valid JSON; otherwise Write returns a *SyntaxError with the byte
// offset and the Extractor stays failed.
//
// The Extractor is a single-pass incremental state machine with an explicit
// stack (no recursion, so any nesting depth is fine): each input byte is
// consumed once and examined at most twice, whatever the chunking (the
// accumulated prefix is never re-parsed), so the total work is linear in the
// input length plus the size of the events. Memory is O(nesting depth) plus the raw text of the values
// being captured for Set/Append (released when they complete) and the last
// Set value per path (for deduplication).
//
// Example:
//
//	x, err := jsonstream.New(map[string]jsonstream.Mode{
//		"subject": jsonstream.Set,
//		"body":    jsonstream.TextDelta,
//		"bullets": jsonstream.Append,
//	})
//	if err != nil {
//		return err
//	}
//	for token := range tokens {
//		events, err := x.Write(token)
//		if err != nil {
//			return err // malformed JSON
//		}
//		for _, ev := range events {
//			publish(ev) // e.g. {Kind: "text-delta", Path: "body", Delta: "Hel"}
//		}
//	}
//	if _, err := x.Close(); err != nil {
//		return err
//	}
//	if !x.Complete() {
//		// the output ended before the root object closed
//	}
package jsonstream
