// Package ssewriter forwards to package httpwire, where the one SSE writer now lives; it is
// kept only while wires still being moved import it, and goes once none does.
package ssewriter

import "github.com/kortyx-go/kortyx/httpwire"

// The names of package httpwire, under their old names.
type (
	Options = httpwire.SSEOptions
	Writer  = httpwire.SSEWriter
)

// The constants of package httpwire, under their old names.
const (
	ResumableHeader  = httpwire.ResumableHeader
	DefaultKeepAlive = httpwire.DefaultKeepAlive
)

// New is httpwire.NewSSEWriter.
var New = httpwire.NewSSEWriter
