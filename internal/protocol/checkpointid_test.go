package protocol

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckpointIDCarriesItsSession(t *testing.T) {
	const u = "0b7e2a4c-5d6f-4a1b-9c8d-7e6f5a4b3c2d"
	long := strings.Repeat("s", MaxCheckpointSessionLength)
	for name, tc := range map[string]struct {
		session, id string
	}{
		"plain":          {"s1", "cp-" + u + "@s1"},
		"with @ and cp-": {"a@b/cp-x", "cp-" + u + "@a@b/cp-x"},
		"longest":        {long, "cp-" + u + "@" + long},
		"too long":       {long + "s", "cp-" + u},
		"none":           {"", "cp-" + u},
	} {
		id := CheckpointID(u, tc.session)
		require.Equal(t, tc.id, id, name)
		require.Nil(t, CheckID("checkpointId", id), name)
		s, ok := CheckpointSession(id)
		if tc.id == "cp-"+u {
			require.False(t, ok, name)
			continue
		}
		require.True(t, ok, name)
		require.Equal(t, tc.session, s, name)
	}
	for _, id := range []string{"cp-" + u, "cp-" + u + "@", "cp-x@s1", "xx-" + u + "@s1", "cp-" + strings.Replace(u, "-", "x", 1) + "@s1", "cp-" + u + "#s1", ""} {
		_, ok := CheckpointSession(id)
		require.False(t, ok, id)
	}
}
