package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/app/allproviders"
)

// The providers the openai-only build refuses are those of the default build: same ids, same
// variables, same order.
func TestUnlinkedListsTheDefaultProviders(t *testing.T) {
	all, un := allproviders.FromEnv(), unlinked()
	require.Len(t, un, len(all))
	for i := range all {
		require.Equal(t, all[i].ID, un[i].ID)
		require.Equal(t, all[i].Env, un[i].Env)
	}
}

// A variable of an unlinked provider is refused at start, by name, with how to build a worker
// that serves it.
func TestUnlinkedRefusesItsVariables(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "a-key")
	p, _, err := unlinked()[1].New()
	require.Nil(t, p)
	require.EqualError(t, err, "kortyx worker: ANTHROPIC_API_KEY is set, but this worker was built with -tags kortyx_openaionly and links the OpenAI wire alone, not the anthropic provider: build it without the tag (go build ./worker), or unset ANTHROPIC_API_KEY")
}
