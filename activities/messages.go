package activities

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"go.temporal.io/sdk/activity"
)

// prefixNode is one node of a conversation prefix chain in the message store: the messages
// added since the node Prev ("" for the first node), and Count, the number of messages of the
// conversation up to the end of this node.
type prefixNode struct {
	Prev     string              `json:"prev"`
	Count    int                 `json:"count"`
	Messages []providers.Message `json:"messages"`
}

// resolveMessages returns the pass's full message list: the prefix sent by reference is read
// from the message store (walking its chain, newest node first) and put before the inline
// messages. It also returns the number of nodes read. A prefix the store does not have fails
// the pass for good with PAYLOAD_MISSING naming the hash (the run then sends the pass again
// with every message inline).
func (a *Activities) resolveMessages(ctx context.Context, in protocol.ModelPassInput) ([]providers.Message, int, error) {
	if in.Prefix == nil {
		return in.Messages, 0, nil
	}
	if in.Prefix.Count <= 0 || in.Prefix.Hash == "" {
		return nil, 0, contracts.ToTemporal(contracts.Errorf(contracts.CodeInvalidRequest,
			"the model pass names a message prefix without messages (count %d, hash %q)", in.Prefix.Count, in.Prefix.Hash))
	}
	var parts [][]providers.Message
	hash, count := in.Prefix.Hash, in.Prefix.Count
	for hash != "" {
		if len(parts) >= protocol.MaxPrefixNodes {
			return nil, 0, contracts.ToTemporal(contracts.Errorf(contracts.CodePayloadCodec,
				"kortyx: the message prefix %s is a chain of more than %d nodes; the pass is sent again inline", in.Prefix.Hash, protocol.MaxPrefixNodes))
		}
		b, err := a.Messages.LoadBytes(ctx, hash) // PAYLOAD_MISSING without the message store (Activities.Messages nil)
		var n prefixNode
		if err == nil && (json.Unmarshal(b, &n) != nil || n.Count != count || len(n.Messages) > count || (n.Prev == "") != (len(n.Messages) == count)) {
			err = contracts.Errorf(contracts.CodePayloadMissing, "kortyx: the message store holds no message prefix node of %d messages under %s", count, hash)
		}
		if err != nil {
			// Not retryable (PAYLOAD_MISSING, PAYLOAD_CODEC_FAILED, or PERSISTENCE_ERROR when the
			// store fails): the run sends the pass again with every message inline.
			return nil, 0, contracts.ToTemporal(err)
		}
		parts = append(parts, n.Messages)
		count -= len(n.Messages)
		hash = n.Prev
	}
	msgs := make([]providers.Message, 0, in.Prefix.Count+len(in.Messages))
	for i := len(parts) - 1; i >= 0; i-- {
		msgs = append(msgs, parts[i]...)
	}
	return append(msgs, in.Messages...), len(parts), nil
}

// storePrefix keeps the pass's conversation (msgs, the full list) in the message store as one
// more node of the prefix chain: the messages the pass received inline, linked to the prefix
// it received (a first node with every message when it received none, or when the chain
// would grow beyond protocol.MaxPrefixNodes). It returns the prefix now stored (nil without
// a store, or when the store fails: the pass's answer is still returned).
func (a *Activities) storePrefix(ctx context.Context, in protocol.ModelPassInput, msgs []providers.Message, depth int) (*protocol.MessagePrefix, error) {
	if a.Messages == nil || len(msgs) == 0 {
		return nil, nil
	}
	n := prefixNode{Count: len(msgs), Messages: msgs}
	if in.Prefix != nil && depth < protocol.MaxPrefixNodes {
		if len(in.Messages) == 0 {
			p := *in.Prefix
			return &p, nil // nothing new: the same prefix
		}
		n.Prev, n.Messages = in.Prefix.Hash, in.Messages
	}
	b, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("kortyx: encoding the conversation: %w", err)
	}
	hash, err := a.Messages.StoreBytes(ctx, b)
	if err != nil {
		// The pass's answer is good: it is returned, and the next pass sends the messages not
		// stored inline.
		activity.GetLogger(ctx).Warn("kortyx: the message store failed; messages stay inline", "error", err)
		return nil, nil
	}
	return &protocol.MessagePrefix{Count: len(msgs), Hash: hash}, nil
}
