package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/codec"
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

// backend is what the activities of a program use: model providers and tools.
type backend struct {
	Providers       *providers.Set
	DefaultProvider string
	DefaultModel    string
	Tools           *tools.Set
	// MCP reaches the MCP servers runs name; MCPHeaders (KORTYX_MCP_HEADERS, a JSON object
	// {url: {header: value}}) are sent to them.
	MCP        *mcp.Pool
	MCPHeaders map[string]map[string]string
	// Telemetry, when set, records the model and tool spans and metrics of the activities
	// (nil: the global OpenTelemetry providers, no-ops unless the program sets them).
	Telemetry *telemetry.Telemetry
	// Messages keeps the conversation prefix of model passes (Config.Messages; nil: inline).
	Messages *codec.Codec
	// Model says in a sentence which model answers (for the programs' banners).
	Model string
	// ProviderInfo lists the registered providers and what configured each (for the start log).
	ProviderInfo []providerInfo
	close        func()
}

// backendOptions is what a program adds to [newBackend]'s configuration from the environment.
type backendOptions struct {
	// Tools are the worker's own tools (the MCP servers' tools are added to them).
	Tools []tools.Tool
	// FakeModel is the script of the fake model; nil: a model that only says no model is
	// configured.
	FakeModel fake.Responder
	// Model, when set, replaces KORTYX_MODEL as the default model ("anthropic:claude-sonnet-4-5").
	Model string
	// Providers are the providers configured from the environment, in this order (nil:
	// [openAIFromEnv] alone).
	Providers []ProviderFromEnv
	// Models, when not nil, are the providers, instead of those of the environment; the
	// default model is then Model's alone (none when Model is "").
	Models []providers.Provider
	// Fakes: a provider none of whose variables is set is the in-process fake model playing
	// FakeModel under its id, so that everything works without a key (dev mode, the demo,
	// KORTYX_FAKE_MODELS=1). Unset, such a provider is not registered, and newBackend fails
	// with a [*noProviderError] naming the variables when none of Providers is configured,
	// unless NoModels is set.
	Fakes bool
	// NoModels: the program runs no model activity (a worker that polls workflow tasks only),
	// so no configured provider is not an error.
	NoModels bool
}

// unconfigured is the fake model of a program that has no script of its own.
func unconfigured(providers.Request) fake.Turn {
	return fake.Text("No model is configured on this worker: set OPENAI_API_KEY or OPENAI_BASE_URL.")
}

// newBackend returns a program's providers and tools. Each provider of the environment
// (o.Providers) is registered when one of its variables is set, reaching what they name
// (OpenAI, Ollama, vLLM, OpenRouter, Groq, …); without them, when o.Fakes is set, the
// in-process fake model playing o.FakeModel answers under its id, so that everything works
// without a key; else it is not registered, and with none configured newBackend fails
// ([noProviderError]) unless o.NoModels. backend.ProviderInfo says which is which. o.Model,
// else KORTYX_MODEL, names the default model (default gpt-4.1-mini, of the openai provider);
// "provider:model" picks the default provider too. The in-process scripted "fake" provider
// (o.FakeModel too) is registered as well. With o.Models, those are the providers. Tools:
// o.Tools.
//
// KORTYX_MCP_SERVERS (a JSON list of {url, include, exclude, prefix}) adds the tools of MCP
// servers to the worker's tools, listed once at start, for every run to use by name.
func newBackend(ctx context.Context, o backendOptions) (*backend, error) {
	script := o.FakeModel
	if script == nil {
		script = unconfigured
	}
	def := providers.Model(envOr("KORTYX_MODEL", "gpt-4.1-mini"))
	if o.Models != nil {
		def = providers.ModelRef{}
	}
	if o.Model != "" {
		def = providers.Model(o.Model)
	}
	if def.Provider == "" && def.Model != "" {
		def.Provider = openai.ID
	}
	b := &backend{DefaultProvider: def.Provider, DefaultModel: def.Model, close: func() {}}
	if h := os.Getenv("KORTYX_MCP_HEADERS"); h != "" {
		if err := json.Unmarshal([]byte(h), &b.MCPHeaders); err != nil {
			return nil, fmt.Errorf("kortyx: KORTYX_MCP_HEADERS must be a JSON object {url: {header: value}}: %w", err)
		}
	}
	list := o.Providers
	if list == nil {
		list = []ProviderFromEnv{openAIFromEnv()}
	}
	var ps []providers.Provider
	var infos []providerInfo
	if o.Models != nil {
		ps = o.Models
		for _, p := range ps {
			infos = append(infos, providerInfo{ID: p.ID(), Where: "the program's own provider"})
		}
	} else {
		var err error
		if ps, infos, err = fromEnv(list, script, o.Fakes); err != nil {
			return nil, err
		}
		if len(ps) == 0 && !o.Fakes && !o.NoModels {
			return nil, &noProviderError{providers: list}
		}
		ps = append(ps, fake.NewResponder(script))
		infos = append(infos, providerInfo{ID: fake.ID, Where: inProcess, Fake: true})
	}
	b.Providers, b.ProviderInfo = providers.NewSet(ps...), infos
	b.Model = "the default provider " + def.Provider + " is not registered"
	if def.Model == "" {
		b.Model = "none by default (runs name theirs)"
	}
	if o.NoModels && !slices.ContainsFunc(infos, func(i providerInfo) bool { return i.ID == def.Provider }) {
		// No model activity runs here: no default to check.
		b.DefaultProvider, b.DefaultModel, b.Model = "", "", "none (this program runs no model activity)"
	}
	for _, i := range infos {
		if i.ID != def.Provider {
			continue
		}
		switch {
		case i.ID == fake.ID:
			b.Model = inProcess + " (" + fake.ID + ":" + def.Model + ")"
		case i.Fake:
			b.Model = "the scripted fake model (no " + strings.Join(envOf(list, def.Provider), " or ") + " set), in process"
		default:
			b.Model = fmt.Sprintf("%s at %s", def.Model, i.Where)
		}
	}
	b.MCP = &mcp.Pool{}
	b.close = func() { _ = b.MCP.Close() }
	ts := append([]tools.Tool(nil), o.Tools...)
	if cfg := os.Getenv("KORTYX_MCP_SERVERS"); cfg != "" {
		var servers []protocol.MCPServer
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
	var err error
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

// activities returns the activities over broker, checked by [activities.New].
func (b *backend) activities(broker stream.Broker) (*activities.Activities, error) {
	return activities.New(activities.Config{Stream: broker, Providers: b.Providers, DefaultProvider: b.DefaultProvider,
		DefaultModel: b.DefaultModel, Tools: b.Tools, MCP: b.MCP, MCPHeaders: b.MCPHeaders,
		TracerProvider: b.tracerProvider(), MeterProvider: b.meterProvider(), Messages: b.Messages})
}

func (b *backend) tracerProvider() trace.TracerProvider {
	if b.Telemetry == nil {
		return nil
	}
	return b.Telemetry.TracerProvider()
}

func (b *backend) meterProvider() metric.MeterProvider {
	if b.Telemetry == nil {
		return nil
	}
	return b.Telemetry.MeterProvider()
}

// stop closes the MCP pool.
func (b *backend) stop() {
	if b.close != nil {
		b.close()
	}
}
