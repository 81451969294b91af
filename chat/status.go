package chat

import (
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
)

// httpStatus maps a failure descriptor to the HTTP status of an error response (spec F4.1):
// category request → 400 (404 for NOT_FOUND and UNKNOWN_WORKFLOW, 409 SESSION_BUSY and
// CLIENT_TURN_CONFLICT, 401 UNAUTHORIZED, 403 FORBIDDEN), provider → 502, persistence → 503
// (TEMPORAL_UNAVAILABLE among them), PAYLOAD_TOO_LARGE → 413, anything else → 500. A
// descriptor without a category is mapped by its code's. [WriteError] answers with it.
func httpStatus(f contracts.Failure) int { return httpwire.Status(f) }
