package activities

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/sdk/activity"
)

// resolveMessages returns the pass's full message list: the messages sent by reference are
// read from the message store. A reference the store does not have fails the pass for good
// with PAYLOAD_MISSING naming the hash (the run then sends the pass again with every message
// inline); a store that does not answer is retried.
func (a *Activities) resolveMessages(ctx context.Context, in contracts.ModelPassInput) ([]contracts.ModelMessage, error) {
	if len(in.MessageRefs) == 0 {
		return in.Messages, nil
	}
	msgs := append([]contracts.ModelMessage(nil), in.Messages...)
	for _, r := range in.MessageRefs {
		if r.Index < 0 || r.Index >= len(msgs) {
			return nil, contracts.ToTemporal(contracts.Errorf(contracts.CodeInvalidRequest,
				"the model pass references message %d of %d", r.Index, len(msgs)))
		}
		var b []byte
		var err error
		if a.Messages == nil {
			err = codec.MissingError(r.Hash) // a worker without the message store (Activities.Messages)
		} else {
			b, err = a.Messages.LoadBytes(ctx, r.Hash)
		}
		if err == nil && json.Unmarshal(b, &msgs[r.Index]) != nil {
			err = contracts.Errorf(contracts.CodePayloadMissing, "kortyx: the message store holds no message under %s", r.Hash)
		}
		if err != nil {
			// Not retryable (PAYLOAD_MISSING, or PERSISTENCE_ERROR when the store fails): the
			// run sends the pass again with every message inline.
			return nil, contracts.ToTemporal(err)
		}
	}
	return msgs, nil
}

// storeMessages keeps the large messages the pass received inline in the message store and
// returns their references (nil without a store). A store that fails ends the storing (the
// pass's answer is still returned).
func (a *Activities) storeMessages(ctx context.Context, in contracts.ModelPassInput, msgs []contracts.ModelMessage) ([]contracts.MessageRef, error) {
	if a.Messages == nil {
		return nil, nil
	}
	byRef := make(map[int]bool, len(in.MessageRefs))
	for _, r := range in.MessageRefs {
		byRef[r.Index] = true
	}
	var out []contracts.MessageRef
	for i, m := range msgs {
		if byRef[i] {
			continue // stored already (the run learned it from an earlier pass)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("kortyx: encoding message %d: %w", i, err)
		}
		if len(b) < contracts.MessageRefMin {
			continue
		}
		hash, err := a.Messages.StoreBytes(ctx, b)
		if err != nil {
			// The pass's answer is good: it is returned, and the messages not stored go inline
			// next time.
			activity.GetLogger(ctx).Warn("kortyx: the message store failed; messages stay inline", "error", err)
			return out, nil
		}
		out = append(out, contracts.MessageRef{Index: i, Hash: hash, Size: len(b)})
	}
	return out, nil
}
