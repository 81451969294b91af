package activities_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools/mcp"
	"github.com/stretchr/testify/require"
)

// New refuses, at start, a configuration that would fail in the middle of a run, naming what
// to fix.
func TestNewChecksTheConfiguration(t *testing.T) {
	broker := stream.NewMemory(stream.MemoryOptions{})
	models := providers.NewSet(fake.NewResponder(func(providers.Request) fake.Turn { return fake.Text("hi") }))
	for _, c := range []struct {
		name string
		cfg  activities.Config
		code contracts.Code // "" for a plain error
		want string
	}{
		{"no broker", activities.Config{Providers: models}, "",
			"kortyx activities: Config.Stream is required: the stream broker the runs publish to (stream.NewMemory(stream.MemoryOptions{}))"},
		{"no providers", activities.Config{Stream: broker}, contracts.CodeProviderConfiguration,
			"kortyx activities: Config.Providers is required: the model providers of hooks.Reason (providers.NewSet(openai.New(...)))"},
		{"empty providers", activities.Config{Stream: broker, Providers: providers.NewSet()}, contracts.CodeProviderConfiguration,
			"kortyx activities: Config.Providers is required: the model providers of hooks.Reason (providers.NewSet(openai.New(...)))"},
		{"unknown default provider", activities.Config{Stream: broker, Providers: models, DefaultProvider: "openai"}, contracts.CodeProviderConfiguration,
			`kortyx activities: Config.DefaultProvider "openai" is not one of Config.Providers (fake)`},
		{"default model without provider", activities.Config{Stream: broker, Providers: models, DefaultModel: "gpt-4.1-mini"}, contracts.CodeProviderConfiguration,
			`kortyx activities: Config.DefaultModel "gpt-4.1-mini" needs a Config.DefaultProvider (one of: fake)`},
		{"MCP headers without a pool", activities.Config{Stream: broker, Providers: models,
			MCPHeaders: map[string]map[string]string{"http://kb/mcp": {"Authorization": "Bearer x"}}}, "",
			"kortyx activities: Config.MCPHeaders are set but Config.MCP is nil: give the activities an MCP pool (&mcp.Pool{})"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := activities.New(c.cfg)
			require.Nil(t, a)
			require.EqualError(t, err, c.want)
			if c.code != "" {
				require.Equal(t, c.code, contracts.CodeOf(err))
			}
		})
	}

	pool := &mcp.Pool{}
	t.Cleanup(func() { require.NoError(t, pool.Close()) })
	cfg := activities.Config{Stream: broker, Providers: models, DefaultProvider: fake.ID, DefaultModel: "test", MCP: pool,
		MCPHeaders: map[string]map[string]string{"http://kb/mcp": {"Authorization": "Bearer x"}}}
	a, err := activities.New(cfg)
	require.NoError(t, err)
	require.Equal(t, cfg, *a)
}
