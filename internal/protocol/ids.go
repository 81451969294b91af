package protocol

import "github.com/kortyx-go/kortyx/contracts"

// MaxIDLength is contracts.MaxIDLength, for the kernel's own ids.
const MaxIDLength = contracts.MaxIDLength

// CheckID is contracts.CheckID, for the kernel and the wires not yet moved to contracts.
func CheckID(field, id string) *contracts.Error { return contracts.CheckID(field, id) }
