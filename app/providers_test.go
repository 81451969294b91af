package app

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
)

func clearProviderEnv(t *testing.T) {
	t.Helper()
	for _, v := range OpenAIFromEnv().Env {
		t.Setenv(v, "")
	}
	t.Setenv("KORTYX_MODEL", "")
	t.Setenv("KORTYX_MCP_SERVERS", "")
}

func TestBackendRegistersTheProvidersOfTheEnvironment(t *testing.T) {
	t.Run("no variables, fakes asked for: the fake server of the wire", func(t *testing.T) {
		clearProviderEnv(t)
		b, err := NewBackend(context.Background(), BackendOptions{FakeServers: true})
		require.NoError(t, err)
		defer b.Close()
		require.Equal(t, []string{"fake", "openai"}, b.Providers.IDs())
		require.Len(t, b.ProviderInfo, 2)
		oa := b.ProviderInfo[0]
		require.Equal(t, "openai", oa.ID)
		require.True(t, oa.Fake)
		require.Empty(t, oa.Env)
		require.True(t, strings.HasPrefix(oa.Where, "http://127.0.0.1:"), oa.Where)
		require.Equal(t, "openai: the scripted fake server at "+oa.Where+" (none of its variables is set)", oa.String())
		require.Equal(t, ProviderInfo{ID: "fake", Where: "the in-process scripted model", Fake: true}, b.ProviderInfo[1])
		require.Equal(t, "fake: the in-process scripted model", b.ProviderInfo[1].String())
		require.Equal(t, "the scripted fake model (no OPENAI_API_KEY or OPENAI_BASE_URL set) at "+oa.Where, b.Model)
		require.Equal(t, "openai", b.DefaultProvider)
		require.Equal(t, "gpt-4.1-mini", b.DefaultModel)
	})
	t.Run("no variables, no fakes: an error naming them", func(t *testing.T) {
		clearProviderEnv(t)
		_, err := NewBackend(context.Background(), BackendOptions{})
		var npe *NoProviderError
		require.ErrorAs(t, err, &npe)
		require.EqualError(t, err, "kortyx: no model provider is configured: set OPENAI_API_KEY or OPENAI_BASE_URL (openai). "+
			"To answer from the scripted fake model servers instead (tests, demos), set KORTYX_FAKE_MODELS=1")
		b, err := NewBackend(context.Background(), BackendOptions{NoModels: true})
		require.NoError(t, err, "a program that runs no model activity")
		defer b.Close()
		require.Equal(t, []string{"fake"}, b.Providers.IDs(), "no fake server, only the in-process model runs name")
		require.Equal(t, "none (this program runs no model activity)", b.Model)
		_, err = b.Activities(stream.NewMemory())
		require.NoError(t, err, "no default provider to check")
	})
	t.Run("a base URL", func(t *testing.T) {
		clearProviderEnv(t)
		t.Setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
		b, err := NewBackend(context.Background(), BackendOptions{})
		require.NoError(t, err)
		defer b.Close()
		require.Equal(t, ProviderInfo{ID: "openai", Where: "http://localhost:11434/v1", Env: []string{"OPENAI_BASE_URL"}}, b.ProviderInfo[0])
		require.Equal(t, "openai: http://localhost:11434/v1 (from [OPENAI_BASE_URL])", b.ProviderInfo[0].String())
		require.Equal(t, "gpt-4.1-mini at http://localhost:11434/v1", b.Model)
	})
	t.Run("KORTYX_MODEL with a provider prefix picks the default provider", func(t *testing.T) {
		clearProviderEnv(t)
		t.Setenv("KORTYX_MODEL", "fake:scripted")
		b, err := NewBackend(context.Background(), BackendOptions{FakeServers: true})
		require.NoError(t, err)
		defer b.Close()
		require.Equal(t, "fake", b.DefaultProvider)
		require.Equal(t, "scripted", b.DefaultModel)
		require.Equal(t, "the in-process scripted model (fake:scripted)", b.Model)
		_, err = b.Activities(stream.NewMemory())
		require.NoError(t, err)

		t.Setenv("KORTYX_MODEL", "nowhere:model-x")
		b, err = NewBackend(context.Background(), BackendOptions{FakeServers: true})
		require.NoError(t, err)
		defer b.Close()
		require.Equal(t, "the default provider nowhere is not registered", b.Model)
		_, err = b.Activities(stream.NewMemory())
		require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err), "the worker fails at start")
	})
}

// The registry of environment providers: one entry per provider package.
func TestProvidersFromEnv(t *testing.T) {
	t.Setenv("KORTYX_TEST_KEY_A", "secret")
	t.Setenv("KORTYX_TEST_URL_A", "")
	t.Setenv("KORTYX_TEST_KEY_B", "")
	t.Setenv("KORTYX_TEST_KEY_C", "")
	stopped := 0
	list := []ProviderFromEnv{
		{ID: "a", Env: []string{"KORTYX_TEST_KEY_A", "KORTYX_TEST_URL_A"},
			New: func() (providers.Provider, string, error) { return fake.New().WithID("a"), "https://a.example/v1", nil }},
		{ID: "b", Env: []string{"KORTYX_TEST_KEY_B"}, // no fake: not registered without its key
			New: func() (providers.Provider, string, error) { t.Fatal("b has no variable set"); return nil, "", nil }},
		{ID: "c", Env: []string{"KORTYX_TEST_KEY_C"},
			New: func() (providers.Provider, string, error) { t.Fatal("c has no variable set"); return nil, "", nil },
			Fake: func(respond fake.Responder) (providers.Provider, string, func()) {
				require.NotNil(t, respond)
				return fake.NewResponder(respond).WithID("c"), "http://127.0.0.1:1", func() { stopped++ }
			}},
	}
	ps, infos, stop, err := fromEnv(list, unconfigured, true)
	if err != nil {
		t.Fatal(err)
	}
	require.Equal(t, []string{"a", "c"}, providers.NewSet(ps...).IDs())
	require.Equal(t, []ProviderInfo{
		{ID: "a", Where: "https://a.example/v1", Env: []string{"KORTYX_TEST_KEY_A"}},
		{ID: "c", Where: "http://127.0.0.1:1", Fake: true},
	}, infos)
	stop()
	require.Equal(t, 1, stopped)

	ps, infos, stop, err = fromEnv(list, unconfigured, false)
	require.NoError(t, err)
	defer stop()
	require.Equal(t, []string{"a"}, providers.NewSet(ps...).IDs(), "without fakes c is not registered")
	require.Len(t, infos, 1)
}
