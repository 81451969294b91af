package codec

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// Marking follows the hashes named inside stored bytes (the prev links of message prefix
// nodes) transitively, with and without encryption; a named hash the store does not have is
// marked and read no further; an unrelated object stays unmarked.
func TestMarkFollowsStoredChains(t *testing.T) {
	for _, keys := range []map[string][]byte{nil, {"k1": []byte(strings.Repeat("k", 32))}} {
		t.Run(fmt.Sprintf("encrypted=%v", keys != nil), func(t *testing.T) {
			ctx := context.Background()
			store, err := NewDirStore(t.TempDir())
			require.NoError(t, err)
			o := Options{Compress: true, Store: store}
			if keys != nil {
				o.Keys, o.KeyID = keys, "k1"
			}
			c, err := New(o)
			require.NoError(t, err)
			missing := c.hash([]byte("never stored"))
			first, err := c.StoreBytes(ctx, []byte(`{"prev":"","count":1,"messages":[{"role":"user","content":"`+missing+`"}]}`))
			require.NoError(t, err)
			second, err := c.StoreBytes(ctx, []byte(`{"prev":"`+first+`","count":2,"messages":[{"role":"assistant","content":"a"}]}`))
			require.NoError(t, err)
			third, err := c.StoreBytes(ctx, []byte(`{"prev":"`+second+`","count":3,"messages":[{"role":"user","content":"b"}]}`))
			require.NoError(t, err)
			other, err := c.StoreBytes(ctx, []byte(`{"prev":"","count":1,"messages":[]}`))
			require.NoError(t, err)

			marked := map[string]bool{}
			p := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("json/plain")},
				Data: []byte(`{"storedPrefix":{"count":3,"hash":"` + third + `"}}`)}
			require.NoError(t, c.mark(p, marked))
			require.Equal(t, map[string]bool{third: true, second: true, first: true, missing: true}, marked)
			require.False(t, marked[other])
		})
	}
}
