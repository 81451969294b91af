package codec

import (
	"context"
	"strconv"

	"github.com/kortyx-go/kortyx/contracts"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// encodingBytes is the encoding of the payload [Codec.StoreBytes] seals around its data.
const encodingBytes = "binary/plain"

// HasStore reports whether the codec has a payload store (what [Codec.StoreBytes] needs).
func (c *Codec) HasStore() bool { return c != nil && c.store != nil }

// WithStore returns a copy of c (same compression, threshold and keys) that keeps payloads in s.
func (c *Codec) WithStore(s Store) *Codec {
	cp := *c
	cp.store = s
	return &cp
}

// StoreBytes keeps data in the codec's store, sealed as the codec seals a payload (compressed
// when that helps, encrypted when a key is set), and returns the hash it is stored under: the
// same data is stored once. The model activity keeps conversation messages this way.
func (c *Codec) StoreBytes(ctx context.Context, data []byte) (hash string, err error) {
	if !c.HasStore() {
		return "", contracts.Errorf(contracts.CodePayloadCodec, "kortyx codec: no payload store is configured; set KORTYX_PAYLOAD_STORE")
	}
	_ = ctx // the store call is bounded by the codec's own timeout
	ref, err := c.encode(&commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingBytes)}, Data: data}, true)
	if err != nil {
		return "", err
	}
	return string(ref.GetData()), nil
}

// LoadBytes returns the data [Codec.StoreBytes] stored under hash: a *contracts.Error with
// [contracts.CodePayloadMissing] naming the hash when the store does not have it, and when
// there is no store (also of a nil *Codec).
func (c *Codec) LoadBytes(ctx context.Context, hash string) ([]byte, error) {
	if !c.HasStore() {
		return nil, missingError(hash)
	}
	if err := checkHash(hash); err != nil {
		return nil, err
	}
	_ = ctx
	p, err := c.decodeOne(&commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingRef), metadataSize: []byte(strconv.Itoa(0))}, Data: []byte(hash)})
	if err != nil {
		return nil, err
	}
	if string(p.GetMetadata()[converter.MetadataEncoding]) != encodingBytes {
		return nil, contracts.Errorf(contracts.CodePayloadCodec, "kortyx codec: %s holds a payload, not stored bytes", hash)
	}
	return p.GetData(), nil
}
