package codec

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
)

// The metadata values of the payloads this codec writes. They are persisted in histories:
// never change them.
const (
	// EncodingGzip marks a gzip-compressed payload; Data is the compressed serialized payload.
	encodingGzip = "binary/kortyx-gzip"
	// EncodingAESGCM marks an encrypted payload; Data is the 12-byte nonce followed by the
	// AES-GCM sealed serialized payload, the key id is in [MetadataKeyID].
	encodingAESGCM = "binary/kortyx-aesgcm"
	// EncodingRef marks a claim-check reference; Data is the hash under which the payload store
	// holds the serialized payload.
	encodingRef = "binary/kortyx-ref"
	// MetadataKeyID is the metadata key naming the key an [EncodingAESGCM] payload is sealed with.
	metadataKeyID = "kortyx-key-id"
	// MetadataSize is the metadata key of a reference: the stored payload's size in bytes.
	metadataSize = "kortyx-size"
)

// DefaultThreshold is the claim-check threshold when [Options.Threshold] is 0: payloads of at
// least 64 KiB (after compression) go to the store.
const defaultThreshold = 64 << 10

// CompressMin is the smallest payload (serialized, in bytes) the codec compresses; smaller ones
// gain nothing from gzip's header.
const compressMin = 1 << 10

// maxDecoded bounds what one gzip payload may expand to (a corrupt or hostile payload cannot
// exhaust memory).
const maxDecoded = 256 << 20

// storeTimeout bounds one payload store call (the codec interface carries no context).
const storeTimeout = 30 * time.Second

// Options configure [New]. The zero value is a codec that changes nothing.
type Options struct {
	// Compress gzips payloads of at least [CompressMin] bytes when that makes them smaller.
	Compress bool
	// Threshold is the serialized size (after compression, before encryption) from which a
	// payload goes to Store and history keeps only a reference (0: [DefaultThreshold]). Unused
	// without Store.
	Threshold int
	// Keys are the AES keys by id (16, 24 or 32 bytes: AES-128, -192, -256). Decoding accepts
	// every id listed, so a retired key stays here until no history needs it.
	Keys map[string][]byte
	// KeyID is the key new payloads are encrypted with ("" with Keys: no encryption; it must be
	// one of Keys).
	KeyID string
	// Store, when set, holds the payloads over Threshold (claim check).
	Store Store
}

// Codec is a [converter.PayloadCodec]: compression, AES-GCM encryption and claim check, in that
// order when encoding. Decoding undoes whatever a payload carries and passes every other
// payload (json/plain, binary/null…) through unchanged, so a worker can switch the codec on
// while runs are in flight. Use it with [converter.NewCodecDataConverter] (see [DataConverter]).
type Codec struct {
	compress  bool
	threshold int
	store     Store
	aeads     map[string]cipher.AEAD
	keys      map[string][]byte
	keyID     string
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New checks o and returns its codec.
func New(o Options) (*Codec, error) {
	c := &Codec{compress: o.Compress, threshold: o.Threshold, store: o.Store, aeads: map[string]cipher.AEAD{}, keys: map[string][]byte{}, keyID: o.KeyID}
	if c.threshold <= 0 {
		c.threshold = defaultThreshold
	}
	ids := make([]string, 0, len(o.Keys))
	for id := range o.Keys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		k := o.Keys[id]
		if !keyIDPattern.MatchString(id) {
			return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: key id %q: use 1 to 64 letters, digits, '.', '_' or '-' (id:base64key)", id)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: key %q is %d bytes; use 16, 24 or 32 random bytes", id, len(k))
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("kortyx codec: key %q: %w", id, err)
		}
		c.aeads[id] = aead
		c.keys[id] = append([]byte(nil), k...)
	}
	if o.KeyID != "" && c.aeads[o.KeyID] == nil {
		return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: the encryption key id %q is not among the keys (%v); add it to the keys or pick one of them", o.KeyID, ids)
	}
	return c, nil
}

// DataConverter is Temporal's default data converter with c applied to every payload: what
// clients, workers, replayers and the test kit need to share.
//
// In workflow code (the SDK binds the converter to the workflow's context) a payload that cannot
// be encoded or decoded panics instead of returning the error: the Go SDK fails the workflow
// execution on a conversion error (e.g. of the run's input during a replay), but only the
// workflow task on a panic (the default WorkflowPanicPolicy), which Temporal retries — so a
// payload store that is down or a key that is not deployed yet stops a run until it is fixed
// instead of failing it.
func DataConverter(c converter.PayloadCodec) converter.DataConverter {
	return &dataConverter{DataConverter: converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c), codec: c}
}

type dataConverter struct {
	converter.DataConverter
	codec converter.PayloadCodec
}

var _ converter.ContextAware = (*dataConverter)(nil)

// WithWorkflowContext implements [converter.ContextAware]: the converter of workflow code.
func (d *dataConverter) WithWorkflowContext(workflow.Context) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), inWorkflow{d.codec})
}

// WithContext implements [converter.ContextAware]: outside workflow code errors are returned.
func (d *dataConverter) WithContext(context.Context) converter.DataConverter { return d }

// WithSerializationContext keeps d (the codec does not depend on the serialization context).
func (d *dataConverter) WithSerializationContext(converter.SerializationContext) converter.DataConverter {
	return d
}

// Codec implements [converter.PayloadCodecProvider].
func (d *dataConverter) Codec() converter.PayloadCodec { return d.codec }

// inWorkflow is the codec in workflow code: errors panic (see [DataConverter]).
type inWorkflow struct{ c converter.PayloadCodec }

func (w inWorkflow) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out, err := w.c.Encode(p)
	if err != nil {
		panic(err)
	}
	return out, nil
}

func (w inWorkflow) Decode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out, err := w.c.Decode(p)
	if err != nil {
		panic(err)
	}
	return out, nil
}

// Encode implements [converter.PayloadCodec].
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		e, err := c.encodeOne(p)
		if err != nil {
			return payloads, err
		}
		out[i] = e
	}
	return out, nil
}

// Decode implements [converter.PayloadCodec].
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		d, err := c.decodeOne(p)
		if err != nil {
			return payloads, err
		}
		out[i] = d
	}
	return out, nil
}

var deterministic = proto.MarshalOptions{Deterministic: true}

func (c *Codec) encodeOne(p *commonpb.Payload) (*commonpb.Payload, error) {
	return c.encode(p, false)
}

// encode is encodeOne; force stores the payload whatever its size (a store is required).
func (c *Codec) encode(p *commonpb.Payload, force bool) (*commonpb.Payload, error) {
	if p == nil {
		return nil, nil
	}
	raw, err := deterministic.Marshal(p)
	if err != nil {
		return nil, failf(err, "kortyx codec: serializing a payload")
	}
	if c.compress && len(raw) >= compressMin {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(raw) // a bytes.Buffer does not fail
		_ = zw.Close()
		if b.Len() < len(raw) {
			p = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingGzip)}, Data: b.Bytes()}
			if raw, err = deterministic.Marshal(p); err != nil {
				return nil, failf(err, "kortyx codec: serializing a payload")
			}
		}
	}
	hash := ""
	if c.store != nil && (force || len(raw) >= c.threshold) {
		hash = c.hash(raw)
	}
	if c.keyID != "" {
		nonce := make([]byte, 12)
		if _, err := rand.Read(nonce); err != nil {
			return nil, failf(err, "kortyx codec: no randomness for a nonce")
		}
		sealed := c.aeads[c.keyID].Seal(nonce, nonce, raw, []byte(c.keyID))
		p = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingAESGCM), metadataKeyID: []byte(c.keyID)}, Data: sealed}
		if hash != "" {
			if raw, err = deterministic.Marshal(p); err != nil {
				return nil, failf(err, "kortyx codec: serializing a payload")
			}
		}
	}
	if hash == "" {
		return p, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := c.store.Put(ctx, hash, raw); err != nil {
		return nil, err
	}
	return &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingRef), metadataSize: []byte(strconv.Itoa(len(raw)))},
		Data: []byte(hash)}, nil
}

// hash names a stored payload by its content (before encryption, so the same content is stored
// once): sha256:<hex>, or with encryption hmac-sha256:<key id>:<hex> under the key, so that a
// reference does not let anyone confirm a guessed content.
func (c *Codec) hash(raw []byte) string {
	if c.keyID != "" {
		m := hmac.New(sha256.New, c.keys[c.keyID])
		m.Write(raw)
		return "hmac-sha256:" + c.keyID + ":" + hex.EncodeToString(m.Sum(nil))
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// maxLayers bounds how many of this codec's layers one payload may carry (reference,
// encryption, compression).
const maxLayers = 3

func (c *Codec) decodeOne(p *commonpb.Payload) (*commonpb.Payload, error) {
	for range maxLayers + 1 {
		if p == nil {
			return nil, nil
		}
		switch string(p.GetMetadata()[converter.MetadataEncoding]) {
		case encodingRef, encodingAESGCM, encodingGzip:
		default:
			return p, nil
		}
		next, err := c.decodeLayer(p)
		if err != nil {
			return nil, err
		}
		p = next
	}
	return nil, contracts.Errorf(contracts.CodePayloadCodec, "kortyx codec: a payload nests more than %d codec layers", maxLayers)
}

// decodeLayer undoes the outermost layer of p, which is one of this codec's encodings.
func (c *Codec) decodeLayer(p *commonpb.Payload) (*commonpb.Payload, error) {
	var raw []byte
	switch enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc {
	case encodingRef:
		hash := string(p.GetData())
		if c.store == nil {
			return nil, contracts.Errorf(contracts.CodePayloadCodec, "kortyx codec: payload %s is in a payload store, and none is configured; set KORTYX_PAYLOAD_STORE as the worker that wrote it", hash)
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		b, err := c.store.Get(ctx, hash)
		cancel()
		if err != nil {
			return nil, err
		}
		raw = b
	case encodingAESGCM:
		id := string(p.GetMetadata()[metadataKeyID])
		aead := c.aeads[id]
		if aead == nil {
			return nil, contracts.Errorf(contracts.CodePayloadCodec, "kortyx codec: a payload is encrypted with key id %q, which is not configured; add that key to KORTYX_CODEC_KEYS", id)
		}
		d := p.GetData()
		if len(d) < aead.NonceSize() {
			return nil, contracts.Errorf(contracts.CodePayloadCodec, "kortyx codec: an encrypted payload (key id %q) is truncated", id)
		}
		b, err := aead.Open(nil, d[:aead.NonceSize()], d[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, contracts.Errorf(contracts.CodePayloadCodec, "kortyx codec: a payload does not authenticate with key id %q (a different key under that id, or corrupt data)", id)
		}
		raw = b
	case encodingGzip:
		zr, err := gzip.NewReader(bytes.NewReader(p.GetData()))
		if err != nil {
			return nil, failf(err, "kortyx codec: a compressed payload is corrupt")
		}
		b, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
		if err != nil || len(b) > maxDecoded {
			return nil, contracts.Errorf(contracts.CodePayloadCodec, "kortyx codec: a compressed payload is corrupt or expands beyond %d bytes", maxDecoded)
		}
		raw = b
	default:
		return p, nil
	}
	next := &commonpb.Payload{}
	if err := proto.Unmarshal(raw, next); err != nil {
		return nil, failf(err, "kortyx codec: a decoded payload is not a payload")
	}
	return next, nil
}

// failf is a PAYLOAD_CODEC_FAILED error whose message is safe to show and whose cause stays in
// Err.
func failf(cause error, msg string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodePayloadCodec, Message: msg, Err: cause}
}
