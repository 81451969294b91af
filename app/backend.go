package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	telemetry "github.com/kortyx-go/kortyx/internal/telemetrycore"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/openai"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/tools/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Backend is what the activities of the programs use: model providers and tools.
type Backend struct {
	Providers       *providers.Set
	DefaultProvider string
	DefaultModel    string
	Tools           *tools.Set
	// MCP reaches the MCP servers runs name; MCPHeaders (KORTYX_MCP_HEADERS, a JSON object
	// {url: {header: value}}) are sent to them.
	MCP        *mcp.Pool
	MCPHeaders map[string]map[string]string
	// Telemetry, when set, records the model and tool spans and metrics of [Backend.Activities]
	// (nil: the global OpenTelemetry providers, no-ops unless the program sets them).
	Telemetry *telemetry.Telemetry
	// Messages keeps the conversation prefix of model passes (Config.Messages; nil: inline).
	Messages *codec.Codec
	// Model says in a sentence which model answers (for the programs' banners).
	Model string
	// ProviderInfo lists the registered providers and what configured each (for the start log).
	ProviderInfo []ProviderInfo
	close        func()
}

// BackendOptions is what a program adds to [NewBackend]'s configuration from the environment.
type BackendOptions struct {
	// Tools are the worker's own tools (the MCP servers' tools are added to them).
	Tools []tools.Tool
	// FakeModel is the script of the fake model that answers when no model endpoint is
	// configured; nil: a model that only says so.
	FakeModel fake.Responder
	// Model, when set, replaces KORTYX_MODEL as the default model ("anthropic:claude-sonnet-4-5").
	Model string
	// Providers are the providers configured from the environment, in this order (nil:
	// [OpenAIFromEnv] alone; allproviders.FromEnv() adds Anthropic and Google).
	Providers []ProviderFromEnv
	// FakeServers: a provider none of whose variables is set reaches a fake server of its wire
	// playing FakeModel, so that everything works without a key (dev mode, the demo, tests,
	// KORTYX_FAKE_MODELS=1: [Config.FakeModels]). Unset, such a provider is not registered,
	// and NewBackend fails with a [*NoProviderError] naming the variables when none of
	// Providers is configured, unless NoModels is set.
	FakeServers bool
	// NoModels: the program runs no model activity (a worker that polls workflow tasks only),
	// so no configured provider is not an error.
	NoModels bool
}

// unconfigured is the fake model of a program that has no script of its own.
func unconfigured(providers.Request) fake.Turn {
	return fake.Text("No model is configured on this worker: set OPENAI_API_KEY or OPENAI_BASE_URL.")
}

// NewBackend returns the programs' providers and tools. Each provider of the environment
// (o.Providers; OpenAI: OPENAI_API_KEY / OPENAI_BASE_URL) is registered when one of its
// variables is set, reaching what they name (OpenAI, Ollama, vLLM, OpenRouter, Groq, …); without
// them, when o.FakeServers is set, a provider that has a fake server of its wire reaches one
// started here, playing o.FakeModel, so that everything works without a key; else it is not
// registered, and with none configured NewBackend fails ([NoProviderError]) unless o.NoModels.
// Backend.ProviderInfo says which is which. o.Model, else
// KORTYX_MODEL, names the default model (default gpt-4.1-mini, of the openai provider);
// "provider:model" picks the default provider too. The in-process scripted "fake" provider (o.FakeModel too) is
// registered as well. Tools: o.Tools.
//
// KORTYX_MCP_SERVERS (a JSON list of {url, include, exclude, prefix}) adds the tools of MCP
// servers to the worker's tools, listed once at start, for every run to use by name.
func NewBackend(ctx context.Context, o BackendOptions) (*Backend, error) {
	script := o.FakeModel
	if script == nil {
		script = unconfigured
	}
	def := contracts.Model(envOr("KORTYX_MODEL", "gpt-4.1-mini"))
	if o.Model != "" {
		def = contracts.Model(o.Model)
	}
	if def.Provider == "" {
		def.Provider = openai.ID
	}
	b := &Backend{DefaultProvider: def.Provider, DefaultModel: def.Model, close: func() {}}
	if h := os.Getenv("KORTYX_MCP_HEADERS"); h != "" {
		if err := json.Unmarshal([]byte(h), &b.MCPHeaders); err != nil {
			return nil, fmt.Errorf("kortyx: KORTYX_MCP_HEADERS must be a JSON object {url: {header: value}}: %w", err)
		}
	}
	list := o.Providers
	if list == nil {
		list = []ProviderFromEnv{OpenAIFromEnv()}
	}
	ps, infos, stop, err := fromEnv(list, script, o.FakeServers)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 && !o.FakeServers && !o.NoModels {
		return nil, &NoProviderError{Providers: list}
	}
	b.close = stop
	ps = append(ps, fake.NewResponder(script))
	infos = append(infos, ProviderInfo{ID: fake.ID, Where: "the in-process scripted model", Fake: true})
	b.Providers, b.ProviderInfo = providers.NewSet(ps...), infos
	b.Model = "the default provider " + def.Provider + " is not registered"
	if o.NoModels && !slices.ContainsFunc(infos, func(i ProviderInfo) bool { return i.ID == def.Provider }) {
		// No model activity runs here: no default to check.
		b.DefaultProvider, b.DefaultModel, b.Model = "", "", "none (this program runs no model activity)"
	}
	for _, i := range infos {
		if i.ID != def.Provider {
			continue
		}
		switch {
		case i.ID == fake.ID:
			b.Model = "the in-process scripted model (" + fake.ID + ":" + def.Model + ")"
		case i.Fake:
			b.Model = "the scripted fake model (no " + strings.Join(envOf(list, def.Provider), " or ") + " set) at " + i.Where
		default:
			b.Model = fmt.Sprintf("%s at %s", def.Model, i.Where)
		}
	}
	b.MCP = mcp.NewPool()
	closeServer := b.close
	b.close = func() { _ = b.MCP.Close(); closeServer() }
	ts := append([]tools.Tool(nil), o.Tools...)
	if cfg := os.Getenv("KORTYX_MCP_SERVERS"); cfg != "" {
		var servers []contracts.MCPServer
		if err := json.Unmarshal([]byte(cfg), &servers); err != nil {
			b.close()
			return nil, fmt.Errorf("kortyx: KORTYX_MCP_SERVERS must be a JSON list of {url, include, exclude, prefix}: %w", err)
		}
		for _, s := range servers {
			mt, err := b.MCP.Tools(ctx, mcp.Server{URL: s.URL, Include: s.Include, Exclude: s.Exclude, Prefix: s.Prefix, Headers: b.MCPHeaders[s.URL]})
			if err != nil {
				b.close()
				return nil, fmt.Errorf("kortyx: KORTYX_MCP_SERVERS: %w", err)
			}
			ts = append(ts, mt...)
		}
	}
	if b.Tools, err = tools.NewSet(ts...); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// envOf is the variables of the environment provider id of list.
func envOf(list []ProviderFromEnv, id string) []string {
	for _, e := range list {
		if e.ID == id {
			return e.Env
		}
	}
	return nil
}

// Activities returns the activities over broker, checked by [activities.New].
func (b *Backend) Activities(broker stream.Broker) (*activities.Activities, error) {
	return activities.New(activities.Config{Stream: broker, Providers: b.Providers, DefaultProvider: b.DefaultProvider,
		DefaultModel: b.DefaultModel, Tools: b.Tools, MCP: b.MCP, MCPHeaders: b.MCPHeaders,
		TracerProvider: b.tracerProvider(), MeterProvider: b.meterProvider(), Messages: b.Messages})
}

func (b *Backend) tracerProvider() trace.TracerProvider {
	if b.Telemetry == nil {
		return nil
	}
	return b.Telemetry.TracerProvider()
}

func (b *Backend) meterProvider() metric.MeterProvider {
	if b.Telemetry == nil {
		return nil
	}
	return b.Telemetry.MeterProvider()
}

// Close stops the fake model server, if one was started.
func (b *Backend) Close() {
	if b.close != nil {
		b.close()
	}
}
