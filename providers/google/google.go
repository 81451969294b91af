package google

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/internal/httperr"
)

// ID is the provider id unless [Options.ID] sets another.
const ID = "google"

// Environment variables read by [FromEnv] (the same ones the genai SDK reads).
const (
	EnvAPIKey       = "GEMINI_API_KEY"
	EnvGoogleAPIKey = "GOOGLE_API_KEY" // wins over GEMINI_API_KEY when both are set, as in the SDK
	EnvBaseURL      = "GOOGLE_GEMINI_BASE_URL"
	EnvUseVertexAI  = "GOOGLE_GENAI_USE_VERTEXAI"
	envProject      = "GOOGLE_CLOUD_PROJECT"
	envLocation     = "GOOGLE_CLOUD_LOCATION"
	envRegion       = "GOOGLE_CLOUD_REGION" // read when GOOGLE_CLOUD_LOCATION is unset
	envVertexURL    = "GOOGLE_VERTEX_BASE_URL"
)

// Backend is the API a [Provider] talks to.
type Backend int

const (
	// BackendGeminiAPI is the Gemini Developer API (generativelanguage.googleapis.com), with an
	// API key. It is the zero value.
	BackendGeminiAPI Backend = iota
	// BackendVertexAI is Vertex AI: a project and location with Application Default
	// Credentials, or an API key (express mode).
	BackendVertexAI
)

func (b Backend) name() string {
	if b == BackendVertexAI {
		return "vertex-ai"
	}
	return "gemini-api"
}

// Options configures a [Provider]. Empty fields are taken from [FromEnv] by [New].
type Options struct {
	// ID is the provider id (default "google").
	ID string
	// APIKey is the API key (sent as x-goog-api-key). Required by the Gemini API backend.
	APIKey string
	// BaseURL is the API root without the version, e.g. "https://generativelanguage.googleapis.com/"
	// (the SDK appends "v1beta/models/…"). Default: Google's endpoint of the backend.
	BaseURL string
	// HTTPClient sends the requests. The default has no overall timeout (streams last as long
	// as the model talks) but bounds connecting (30s), the TLS handshake (10s) and the wait for
	// response headers (10m). On Vertex AI without an API key, a client of your own must
	// authenticate its requests; without one the SDK builds an authenticated client from
	// Application Default Credentials.
	HTTPClient *http.Client
	// Backend selects the Gemini API (default) or Vertex AI.
	Backend Backend
	// Project and Location are the Vertex AI project and region (e.g. "us-central1"); not used
	// by the Gemini API.
	Project, Location string
}

// FromEnv returns the options the environment sets: the API key (GOOGLE_API_KEY, else
// GEMINI_API_KEY), the base URL (GOOGLE_GEMINI_BASE_URL, or GOOGLE_VERTEX_BASE_URL on Vertex AI),
// the backend (Vertex AI when GOOGLE_GENAI_USE_VERTEXAI is "1" or "true"), the project
// (GOOGLE_CLOUD_PROJECT) and the location (GOOGLE_CLOUD_LOCATION, else GOOGLE_CLOUD_REGION).
func FromEnv() Options {
	o := Options{APIKey: os.Getenv(EnvGoogleAPIKey)}
	if o.APIKey == "" {
		o.APIKey = os.Getenv(EnvAPIKey)
	}
	if v := strings.ToLower(os.Getenv(EnvUseVertexAI)); v == "1" || v == "true" {
		o.Backend = BackendVertexAI
		o.BaseURL = os.Getenv(envVertexURL)
		o.Project = os.Getenv(envProject)
		o.Location = os.Getenv(envLocation)
		if o.Location == "" {
			o.Location = os.Getenv(envRegion)
		}
	} else {
		o.BaseURL = os.Getenv(EnvBaseURL)
	}
	return o
}

// Provider is a [providers.Provider] for Gemini models, over the Gemini API or Vertex AI, built
// on google.golang.org/genai.
type Provider struct {
	id      string
	backend Backend
	baseURL string // for messages
	client  *genai.Client
	capture bool // requests go through the client of wrapClient
}

var _ providers.Provider = (*Provider)(nil)

// New returns a provider. Empty APIKey, BaseURL, Project and Location are filled from
// [FromEnv] (for the backend opts names; New never switches the backend, pass FromEnv() to
// honour GOOGLE_GENAI_USE_VERTEXAI), once, here. Without an API key on the Gemini API backend it
// fails with PROVIDER_CONFIGURATION naming GEMINI_API_KEY; on Vertex AI without a key or project
// it fails the same way. The SDK's own retries and automatic stream continuation are turned
// off: the activity retry policy is the only retry.
func New(ctx context.Context, opts Options) (*Provider, error) {
	env := FromEnv()
	if env.Backend != opts.Backend {
		env = Options{APIKey: env.APIKey}
	}
	// On Vertex AI a project (of opts or the environment) wins over a key of the environment,
	// as in the SDK.
	vertexProject := opts.Backend == BackendVertexAI && (opts.Project != "" || opts.Location != "" || env.Project != "")
	if opts.APIKey == "" && !vertexProject {
		opts.APIKey = env.APIKey
	}
	if opts.BaseURL == "" {
		opts.BaseURL = env.BaseURL
	}
	if opts.Project == "" {
		opts.Project = env.Project
	}
	if opts.Location == "" {
		opts.Location = env.Location
	}
	p := &Provider{id: opts.ID, backend: opts.Backend, baseURL: opts.BaseURL}
	if p.id == "" {
		p.id = ID
	}
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: err,
				Message: "The base URL '" + opts.BaseURL + "' is not an http(s) URL: set it to the API root, e.g. https://generativelanguage.googleapis.com/."}
		}
		p.baseURL = u.Redacted()
	}
	cc := &genai.ClientConfig{APIKey: opts.APIKey, HTTPOptions: genai.HTTPOptions{
		BaseURL:      opts.BaseURL,
		RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](1)}, // no retries by the SDK
	}}
	switch opts.Backend {
	case BackendVertexAI:
		cc.Backend = genai.BackendVertexAI
		if opts.APIKey == "" {
			// Project and location with credentials (an API key would otherwise be express mode).
			cc.Project, cc.Location = opts.Project, opts.Location
			if opts.Project == "" && opts.BaseURL == "" {
				return nil, &contracts.Error{Code: contracts.CodeProviderConfiguration,
					Message: "Vertex AI needs a project: set " + envProject + " (and " + envLocation + ") or google.Options.Project, or an API key.",
					Details: map[string]any{"env": envProject}}
			}
		}
	default:
		cc.Backend = genai.BackendGeminiAPI
		if opts.APIKey == "" {
			return nil, &contracts.Error{Code: contracts.CodeProviderConfiguration,
				Message: EnvAPIKey + " is not set: export it (or " + EnvGoogleAPIKey + ", or set google.Options.APIKey); a local Gemini-compatible server needs some key too.",
				Details: map[string]any{"env": EnvAPIKey}}
		}
	}
	// Our own client, wrapped to see the status and headers of error responses, unless Vertex AI
	// needs the SDK's authenticated one.
	if opts.HTTPClient != nil || opts.Backend != BackendVertexAI || opts.APIKey != "" {
		base := opts.HTTPClient
		if base == nil {
			base = httperr.DefaultHTTPClient()
		}
		cc.HTTPClient = wrapClient(base)
		p.capture = true
	}
	client, err := genai.NewClient(ctx, cc)
	if err != nil {
		return nil, &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: err,
			Message: "The Google GenAI client could not be created (" + opts.Backend.name() + "): " + err.Error()}
	}
	p.client = client
	if p.baseURL == "" {
		p.baseURL = client.ClientConfig().HTTPOptions.BaseURL
	}
	return p, nil
}

// ID implements [providers.Provider].
func (p *Provider) ID() string { return p.id }

// BaseURL returns the API root the provider talks to.
func (p *Provider) BaseURL() string { return p.baseURL }

// Generate implements [providers.Provider]. It streams (streamGenerateContent) when onDelta is
// not nil, and calls generateContent otherwise.
func (p *Provider) Generate(ctx context.Context, req providers.Request, onDelta func(string) error) (providers.Response, error) {
	if err := ctx.Err(); err != nil {
		return providers.Response{}, err
	}
	b, err := buildRequest(req, p.id)
	if err != nil {
		return providers.Response{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(req.ModelOptions)) {
		b.warnings = append(b.warnings, providers.Warning{Type: providers.WarningUnsupported, Setting: "modelOptions." + k,
			Message: "The google provider has no model options (got '" + k + "'); it was ignored. Configure the provider with google.Options instead."})
	}
	h := &capture{}
	if p.capture {
		ctx = withCapture(ctx, h)
	}
	acc := newAccumulator(p.id, onDelta, req.Messages)
	if onDelta == nil {
		resp, err := p.client.Models.GenerateContent(ctx, req.Model, b.contents, b.config)
		if err != nil {
			return providers.Response{}, p.classify(ctx, err, h)
		}
		if err := acc.add(resp); err != nil {
			return providers.Response{}, err
		}
	} else {
		for chunk, err := range p.client.Models.GenerateContentStream(ctx, req.Model, b.contents, b.config) {
			if err != nil {
				return providers.Response{}, p.classify(ctx, err, h)
			}
			if err := ctx.Err(); err != nil {
				return providers.Response{}, err
			}
			if err := acc.add(chunk); err != nil {
				return providers.Response{}, err // a refusal, or onDelta's error unchanged
			}
		}
	}
	if acc.message == "" {
		acc.message = h.getFinishMessage() // the SDK keeps no finishMessage on the Gemini API
	}
	resp, err := acc.result(p.baseURL)
	if err != nil {
		return providers.Response{}, err
	}
	resp.Warnings = append(b.warnings, resp.Warnings...)
	return resp, nil
}
