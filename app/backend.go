package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/openai"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/telemetry"
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
	// Messages keeps the large messages of model passes (Config.Messages; nil: inline).
	Messages *codec.Codec
	// Model says in a sentence which model answers (for the programs' banners).
	Model string
	close func()
}

// BackendOptions is what a program adds to [NewBackend]'s configuration from the environment.
type BackendOptions struct {
	// Tools are the worker's own tools (the MCP servers' tools are added to them).
	Tools []tools.Tool
	// FakeModel is the script of the fake model that answers when no model endpoint is
	// configured; nil: a model that only says so.
	FakeModel fake.Responder
}

// unconfigured is the fake model of a program that has no script of its own.
func unconfigured(providers.Request) fake.Turn {
	return fake.Text("No model is configured on this worker: set OPENAI_API_KEY or OPENAI_BASE_URL.")
}

// NewBackend returns the programs' providers and tools. The "openai" provider reaches
// OPENAI_BASE_URL / OPENAI_API_KEY when either is set (OpenAI, Ollama, vLLM, OpenRouter, Groq,
// …); otherwise it reaches a fake OpenAI-compatible server started here, playing o.FakeModel,
// so that everything works without a key. KORTYX_MODEL names the default model (default
// gpt-4.1-mini). The in-process scripted "fake" provider (o.FakeModel too) is registered as
// well. Tools: o.Tools.
//
// KORTYX_MCP_SERVERS (a JSON list of {url, include, exclude, prefix}) adds the tools of MCP
// servers to the worker's tools, listed once at start, for every run to use by name.
func NewBackend(ctx context.Context, o BackendOptions) (*Backend, error) {
	script := o.FakeModel
	if script == nil {
		script = unconfigured
	}
	b := &Backend{DefaultProvider: "openai", DefaultModel: envOr("KORTYX_MODEL", "gpt-4.1-mini"), close: func() {}}
	if h := os.Getenv("KORTYX_MCP_HEADERS"); h != "" {
		if err := json.Unmarshal([]byte(h), &b.MCPHeaders); err != nil {
			return nil, fmt.Errorf("kortyx: KORTYX_MCP_HEADERS must be a JSON object {url: {header: value}}: %w", err)
		}
	}
	oa := openai.Options{}
	if os.Getenv("OPENAI_API_KEY") == "" && os.Getenv("OPENAI_BASE_URL") == "" {
		srv := fakeserver.New(script)
		b.close = srv.Close
		oa.BaseURL = srv.URL()
		b.Model = fmt.Sprintf("the scripted fake model (no OPENAI_API_KEY or OPENAI_BASE_URL set) at %s", srv.URL())
	} else {
		b.Model = fmt.Sprintf("%s at %s", b.DefaultModel, envOr("OPENAI_BASE_URL", "https://api.openai.com/v1"))
	}
	b.Providers = providers.NewSet(openai.New(oa), fake.NewResponder(script))
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
	var err error
	if b.Tools, err = tools.NewSet(ts...); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
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
