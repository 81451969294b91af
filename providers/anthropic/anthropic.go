package anthropic

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/internal/httperr"
)

// ID is the provider id unless [Options.ID] sets another: models are named "anthropic:<model>".
const ID = "anthropic"

// defaultBaseURL is Anthropic's own API.
const defaultBaseURL = "https://api.anthropic.com"

// defaultMaxTokens is the max_tokens of a pass that sets no MaxOutputTokens (the Messages API
// requires one) unless [Options.DefaultMaxTokens] sets another.
const defaultMaxTokens = 4096

// Environment variables read by [FromEnv].
const (
	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"
)

// Options configures a [Provider]. The zero value talks to Anthropic's API, without a key
// (every pass then fails with PROVIDER_CONFIGURATION naming ANTHROPIC_API_KEY); [FromEnv] fills
// the key and base URL from the environment.
type Options struct {
	// ID is the provider id (default "anthropic").
	ID string
	// APIKey is the API key (sent as the SDK sends it). Required by Anthropic's own API; a pass
	// to another base URL without a key sends no credentials.
	APIKey string
	// BaseURL is the API root, without /v1 (default "https://api.anthropic.com").
	BaseURL string
	// HTTPClient sends the requests. The default has no overall timeout (streams last as long
	// as the model talks) but bounds connecting (30s), the TLS handshake (10s) and the wait for
	// response headers (10m).
	HTTPClient *http.Client
	// DefaultMaxTokens is the max_tokens of a pass without MaxOutputTokens (default 4096).
	DefaultMaxTokens int
}

// Provider is a [providers.Provider] for Anthropic's Messages API, on the official Go SDK.
type Provider struct {
	id        string
	baseURL   string
	apiKey    string
	http      *http.Client
	maxTokens int
}

var _ providers.Provider = (*Provider)(nil)

// New returns a provider configured by opts only (it reads no environment; see [FromEnv]).
func New(opts Options) *Provider {
	p := &Provider{id: opts.ID, baseURL: opts.BaseURL, apiKey: opts.APIKey, http: opts.HTTPClient, maxTokens: opts.DefaultMaxTokens}
	if p.id == "" {
		p.id = ID
	}
	if p.baseURL == "" {
		p.baseURL = defaultBaseURL
	}
	if p.http == nil {
		p.http = httperr.DefaultHTTPClient()
	}
	if p.maxTokens <= 0 {
		p.maxTokens = defaultMaxTokens
	}
	return p
}

// FromEnv returns a provider with the key of $ANTHROPIC_API_KEY and the base URL of
// $ANTHROPIC_BASE_URL (default Anthropic's API), read here, once.
func FromEnv() *Provider {
	return New(Options{APIKey: os.Getenv(EnvAPIKey), BaseURL: os.Getenv(EnvBaseURL)})
}

// ID implements [providers.Provider].
func (p *Provider) ID() string { return p.id }

// BaseURL returns the API root the provider talks to.
func (p *Provider) BaseURL() string { return p.baseURL }

// Generate implements [providers.Provider]. It streams when onDelta is not nil.
func (p *Provider) Generate(ctx context.Context, req providers.Request, onDelta func(string) error) (providers.Response, error) {
	if err := ctx.Err(); err != nil {
		return providers.Response{}, err
	}
	u, err := url.Parse(p.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return providers.Response{}, &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: err,
			Message: "The base URL '" + p.baseURL + "' is not an http(s) URL: set " + EnvBaseURL + " (or anthropic.Options.BaseURL) to the API root, e.g. https://api.anthropic.com."}
	}
	if p.apiKey == "" && strings.EqualFold(u.Hostname(), "api.anthropic.com") {
		return providers.Response{}, &contracts.Error{Code: contracts.CodeProviderConfiguration,
			Message: EnvAPIKey + " is not set: export it (or set anthropic.Options.APIKey); for another Anthropic-compatible server set " + EnvBaseURL,
			Details: map[string]any{"env": EnvAPIKey}}
	}
	var warnings []providers.Warning
	for k := range req.ModelOptions {
		if k == "streaming" {
			continue // Kortyx's own model option, honoured by the caller (hooks.Reason)
		}
		warnings = append(warnings, providers.Warning{Type: providers.WarningUnsupported, Setting: "modelOptions." + k,
			Message: "The anthropic provider has no model options ('" + k + "' was ignored); set provider options in CallOptions.ProviderOptions[\"anthropic\"]."})
	}
	sortWarnings(warnings)
	params, more, err := buildParams(req, p.maxTokens, p.id)
	if err != nil {
		return providers.Response{}, err
	}
	warnings = append(warnings, more...)

	h := &capture{}
	client := sdk.NewClient(p.options(h)...)
	var resp providers.Response
	if onDelta != nil {
		resp, err = p.stream(ctx, &client, params, onDelta, h, u.Redacted())
	} else {
		resp, err = p.complete(ctx, &client, params, h, u.Redacted())
	}
	if err != nil {
		return providers.Response{}, err
	}
	resp.Warnings = append(warnings, resp.Warnings...)
	return resp, nil
}

// options are the SDK options of one pass: nothing from the environment (the provider was
// configured at construction), no SDK retries (the activity retry policy is the only retry),
// and a middleware that records whether a request went out and the headers of its response.
func (p *Provider) options(h *capture) []option.RequestOption {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(p.baseURL),
		option.WithHTTPClient(p.http),
		option.WithMaxRetries(0),
		option.WithMiddleware(h.middleware),
	}
	if p.apiKey != "" {
		opts = append(opts, option.WithAPIKey(p.apiKey))
	}
	return opts
}

// capture records, for one pass, whether a request was sent and the response's headers (for
// Retry-After on errors).
type capture struct {
	mu        sync.Mutex
	attempted bool
	header    http.Header
}

func (c *capture) middleware(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	c.mu.Lock()
	c.attempted = true
	c.mu.Unlock()
	resp, err := next(r)
	if err == nil && resp != nil {
		c.mu.Lock()
		c.header = resp.Header.Clone()
		c.mu.Unlock()
	}
	return resp, err
}

func (c *capture) get() (bool, http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempted, c.header
}
