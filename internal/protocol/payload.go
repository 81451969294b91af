package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
)

// PayloadLimit is the largest encoded size, in bytes, of a value this module sends to Temporal
// in one payload — a workflow or child workflow input, a continue-as-new input, a signal, an
// update result, an activity result, a workflow result: Temporal's 2 MiB blob limit less
// 64 KiB for the envelope (payload metadata, the other fields of the command). A larger value
// fails its command or its workflow task, and the server may terminate the workflow, so it is
// refused before it is sent ([CheckPayload]).
const PayloadLimit = 2<<20 - 64<<10

// CheckPayload returns a PAYLOAD_TOO_LARGE error when v, encoded as JSON (as Temporal's default
// data converter encodes it), is larger than [PayloadLimit]; nil otherwise, and also when v
// cannot be encoded (the encoder reports that where it happens). what names the value ("the
// result of tool \"search\""), fix says how to make it smaller. The error's details are what,
// size, limit and fix.
func CheckPayload(what string, v any, fix string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return CheckPayloadSize(what, len(b), fix)
}

// CheckPayloadSize is [CheckPayload] for a value already encoded: size is its length in bytes.
func CheckPayloadSize(what string, size int, fix string) error {
	if size <= PayloadLimit {
		return nil
	}
	return &contracts.Error{Code: contracts.CodePayloadTooLarge,
		Message: fmt.Sprintf("%s is %d bytes encoded, over the %d-byte limit of a Temporal payload: %s.", what, size, PayloadLimit, fix),
		Details: map[string]any{"what": what, "size": size, "limit": PayloadLimit, "fix": fix}}
}

// AddStart checks in's size as [CheckPayload] does (what and fix as there), and then records
// rec in it ([RunStart].Start) when in stays within [PayloadLimit] with it; a run whose input
// would not records its start itself. The error depends on in alone: rec comes from the
// worker's configuration, which a replay on another worker may not share, and a workflow that
// starts the run must make the same decision on every replay.
func AddStart(in *RunStart, rec *StartRecord, what, fix string) error {
	b, err := json.Marshal(in)
	if err != nil {
		return nil
	}
	if err := CheckPayloadSize(what, len(b), fix); err != nil {
		return err
	}
	if rec == nil {
		return nil
	}
	r, err := json.Marshal(rec)
	if err == nil && len(b)+len(r)+len(`,"start":`) <= PayloadLimit {
		in.Start = rec
	}
	return nil
}
