package protocol

import "encoding/json"

// Emission is a value published through an output contract.
type Emission struct {
	Contract string          `json:"contract"`
	Data     json.RawMessage `json:"data"`
	StreamID string          `json:"streamId"`
	Index    int             `json:"index"`
}

// InterruptRecord is one question asked through an interrupt contract and its answer.
type InterruptRecord struct {
	Contract string          `json:"contract"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
}
