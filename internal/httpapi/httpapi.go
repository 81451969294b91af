// Package httpapi forwards to package httpwire, where what every HTTP wire shares now lives;
// it is kept only while wires still being moved import it, and goes once none does.
package httpapi

import "github.com/kortyx-go/kortyx/httpwire"

// The names of package httpwire, under their old names.
type (
	Body = httpwire.ErrorBody
	CORS = httpwire.CORS
)

// DefaultMaxBody is httpwire.DefaultMaxBody.
const DefaultMaxBody = httpwire.DefaultMaxBody

// The functions of package httpwire, under their old names.
var (
	Public        = httpwire.Public
	StreamFailure = httpwire.StreamFailure
	ErrorChunk    = httpwire.ErrorChunk
	WriteError    = httpwire.WriteError
	JSONErrors    = httpwire.JSONErrors
	Status        = httpwire.Status
	ReadBody      = httpwire.ReadBody
	Refusal       = httpwire.Refusal
)
