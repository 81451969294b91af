package chat

import (
	"github.com/kortyx-go/kortyx/contracts"
)

// isGone reports whether err says the stream is gone.
func isGone(err error) bool { return contracts.CodeOf(err) == contracts.CodeStreamGone }
