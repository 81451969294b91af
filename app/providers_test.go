package app

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
)

func clearProviderEnv(t *testing.T) {
	t.Helper()
	for _, v := range openAIFromEnv().Env {
		t.Setenv(v, "")
	}
	t.Setenv("KORTYX_MODEL", "")
	t.Setenv("KORTYX_MCP_SERVERS", "")
}

func TestBackendRegistersTheProvidersOfTheEnvironment(t *testing.T) {
	t.Run("no variables, fakes asked for: the in-process fake model under the provider's id", func(t *testing.T) {
		clearProviderEnv(t)
		b, err := newBackend(context.Background(), backendOptions{Fakes: true,
			FakeModel: func(providers.Request) fake.Turn { return fake.Turn{Deltas: []string{"from ", "the script"}} }})
		require.NoError(t, err)
		defer b.stop()
		require.Equal(t, []string{"fake", "openai"}, b.Providers.IDs())
		require.Equal(t, []providerInfo{{ID: "openai", Where: "the in-process scripted model", Fake: true},
			{ID: "fake", Where: "the in-process scripted model", Fake: true}}, b.ProviderInfo)
		require.Equal(t, "openai: the in-process scripted model (none of its variables is set)", b.ProviderInfo[0].String())
		require.Equal(t, "fake: the in-process scripted model", b.ProviderInfo[1].String())
		require.Equal(t, "the scripted fake model (no OPENAI_API_KEY or OPENAI_BASE_URL set), in process", b.Model)
		require.Equal(t, "openai", b.DefaultProvider)
		require.Equal(t, "gpt-4.1-mini", b.DefaultModel)
		p, err := b.Providers.Get("openai")
		require.NoError(t, err)
		var deltas []string
		resp, err := p.Generate(context.Background(), providers.Request{Model: "gpt-4.1-mini"}, func(d string) error { deltas = append(deltas, d); return nil })
		require.NoError(t, err)
		require.Equal(t, []string{"from ", "the script"}, deltas, "the script's chunks, as they are")
		require.Equal(t, "from the script", resp.Text)
	})
	t.Run("a program's own models", func(t *testing.T) {
		clearProviderEnv(t)
		t.Setenv("KORTYX_MODEL", "openai:gpt-4.1")
		b, err := newBackend(context.Background(), backendOptions{Models: []providers.Provider{fake.New().WithID("mine")}})
		require.NoError(t, err)
		defer b.stop()
		require.Equal(t, []string{"mine"}, b.Providers.IDs(), "no provider of the environment, no in-process fake")
		require.Equal(t, [2]string{"", ""}, [2]string{b.DefaultProvider, b.DefaultModel}, "KORTYX_MODEL is not theirs")
		require.Equal(t, "none by default (runs name theirs)", b.Model)
		_, err = b.activities(stream.NewMemory(stream.MemoryOptions{}))
		require.NoError(t, err)
		b, err = newBackend(context.Background(), backendOptions{Models: []providers.Provider{fake.New().WithID("mine")}, Model: "mine:m"})
		require.NoError(t, err)
		defer b.stop()
		require.Equal(t, [2]string{"mine", "m"}, [2]string{b.DefaultProvider, b.DefaultModel})
	})
	t.Run("no variables, no fakes: an error naming them", func(t *testing.T) {
		clearProviderEnv(t)
		_, err := newBackend(context.Background(), backendOptions{})
		var npe *noProviderError
		require.ErrorAs(t, err, &npe)
		require.EqualError(t, err, "kortyx: no model provider is configured: set OPENAI_API_KEY or OPENAI_BASE_URL (openai). "+
			"To answer from the scripted fake model instead (tests, demos), set KORTYX_FAKE_MODELS=1")
		b, err := newBackend(context.Background(), backendOptions{NoModels: true})
		require.NoError(t, err, "a program that runs no model activity")
		defer b.stop()
		require.Equal(t, []string{"fake"}, b.Providers.IDs(), "no stand-in for openai, only the in-process model runs name")
		require.Equal(t, "none (this program runs no model activity)", b.Model)
		_, err = b.activities(stream.NewMemory(stream.MemoryOptions{}))
		require.NoError(t, err, "no default provider to check")
	})
	t.Run("a base URL", func(t *testing.T) {
		clearProviderEnv(t)
		t.Setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
		b, err := newBackend(context.Background(), backendOptions{})
		require.NoError(t, err)
		defer b.stop()
		require.Equal(t, providerInfo{ID: "openai", Where: "http://localhost:11434/v1", Env: []string{"OPENAI_BASE_URL"}}, b.ProviderInfo[0])
		require.Equal(t, "openai: http://localhost:11434/v1 (from [OPENAI_BASE_URL])", b.ProviderInfo[0].String())
		require.Equal(t, "gpt-4.1-mini at http://localhost:11434/v1", b.Model)
	})
	t.Run("KORTYX_MODEL with a provider prefix picks the default provider", func(t *testing.T) {
		clearProviderEnv(t)
		t.Setenv("KORTYX_MODEL", "fake:scripted")
		b, err := newBackend(context.Background(), backendOptions{Fakes: true})
		require.NoError(t, err)
		defer b.stop()
		require.Equal(t, "fake", b.DefaultProvider)
		require.Equal(t, "scripted", b.DefaultModel)
		require.Equal(t, "the in-process scripted model (fake:scripted)", b.Model)
		_, err = b.activities(stream.NewMemory(stream.MemoryOptions{}))
		require.NoError(t, err)

		t.Setenv("KORTYX_MODEL", "nowhere:model-x")
		b, err = newBackend(context.Background(), backendOptions{Fakes: true})
		require.NoError(t, err)
		defer b.stop()
		require.Equal(t, "the default provider nowhere is not registered", b.Model)
		_, err = b.activities(stream.NewMemory(stream.MemoryOptions{}))
		require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err), "the worker fails at start")
	})
}

// The registry of environment providers: one entry per provider package.
func TestProvidersFromEnv(t *testing.T) {
	t.Setenv("KORTYX_TEST_KEY_A", "secret")
	t.Setenv("KORTYX_TEST_URL_A", "")
	t.Setenv("KORTYX_TEST_KEY_B", "")
	list := []ProviderFromEnv{
		{ID: "a", Env: []string{"KORTYX_TEST_KEY_A", "KORTYX_TEST_URL_A"},
			New: func() (providers.Provider, string, error) { return fake.New().WithID("a"), "https://a.example/v1", nil }},
		{ID: "b", Env: []string{"KORTYX_TEST_KEY_B"},
			New: func() (providers.Provider, string, error) { t.Fatal("b has no variable set"); return nil, "", nil }},
	}
	ps, infos, err := fromEnv(list, unconfigured, true)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, providers.NewSet(ps...).IDs())
	require.Equal(t, []providerInfo{
		{ID: "a", Where: "https://a.example/v1", Env: []string{"KORTYX_TEST_KEY_A"}},
		{ID: "b", Where: "the in-process scripted model", Fake: true},
	}, infos)
	resp, err := ps[1].Generate(context.Background(), providers.Request{}, nil)
	require.NoError(t, err)
	require.Equal(t, "No model is configured on this worker: set OPENAI_API_KEY or OPENAI_BASE_URL.", resp.Text, "b plays the script")

	ps, infos, err = fromEnv(list, unconfigured, false)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, providers.NewSet(ps...).IDs(), "without fakes b is not registered")
	require.Len(t, infos, 1)
}
