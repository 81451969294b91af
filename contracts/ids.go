package contracts

import (
	"fmt"
	"unicode/utf8"
)

// MaxIDLength is the longest id [CheckID] accepts, in characters (bytes: ids are ASCII).
const MaxIDLength = 256

// CheckID checks an id that arrives from outside (a session, clientTurnId, checkpoint or run
// id) against the one rule for ids: 1 to [MaxIDLength] characters, each a visible ASCII
// character (letters, digits and the punctuation !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~); no spaces,
// control characters or non-ASCII letters. Ids the system makes (session-<uuid>, run-<uuid>,
// cp-<uuid>@<sessionId>, child runs <run>/<node>#<n>/<call>) follow it. Temporal carries ids in gRPC
// headers, which take only ASCII.
//
// field names the id in the error: an INVALID_REQUEST [*Error] with one [Issue] at path
// [field] (code "invalid_id") saying what to fix; nil when the id is valid.
func CheckID(field, id string) *Error {
	msg := idProblem(field, id)
	if msg == "" {
		return nil
	}
	return &Error{Code: CodeInvalidRequest, Message: msg, Issues: []Issue{{Path: []any{field}, Code: "invalid_id", Message: msg}}}
}

// idProblem says what is wrong with id ("" when nothing is).
func idProblem(field, id string) string {
	switch {
	case id == "":
		return field + " must not be empty"
	case len(id) > MaxIDLength:
		return fmt.Sprintf("%s must have at most %d characters", field, MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			r, _ := utf8.DecodeRuneInString(id[i:])
			return fmt.Sprintf("%s must use only visible ASCII characters (letters, digits, punctuation; no spaces): %q at byte %d is not allowed", field, r, i)
		}
	}
	return ""
}
