package openai

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/internal/httperr"
)

// ID is the provider id unless [Options.ID] sets another.
const ID = "openai"

// defaultBaseURL is OpenAI's own API.
const defaultBaseURL = "https://api.openai.com/v1"

// Environment variables read by [New].
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// Per-request options read from [providers.Request.ModelOptions] (the options of the model
// reference, plain data set by node code).
const (
	// optionBaseURL (string) sends this request to another OpenAI-compatible server.
	optionBaseURL = "baseURL"
	// optionAPIKey (string) is the API key of this request.
	optionAPIKey = "apiKey"
)

// Options configures a [Provider]. The zero value talks to $OPENAI_BASE_URL (or OpenAI) with
// $OPENAI_API_KEY.
type Options struct {
	// ID is the provider id (default "openai"); register several providers under different ids
	// to talk to several servers.
	ID string
	// BaseURL is the API root, ending in /v1 (default $OPENAI_BASE_URL, else
	// "https://api.openai.com/v1").
	BaseURL string
	// APIKey is sent as a bearer token (default $OPENAI_API_KEY). It is required only by
	// OpenAI's own API; without a key no Authorization header is sent.
	APIKey string
	// Organization is sent as the OpenAI-Organization header.
	Organization string
	// HTTPClient sends the requests. The default has no overall timeout (streams last as long
	// as the model talks) but bounds connecting (30s), the TLS handshake (10s) and the wait for
	// response headers (10m: a non-streamed answer of a reasoning model can take minutes).
	HTTPClient *http.Client
}

// Provider is a [providers.Provider] for OpenAI-compatible chat-completions APIs: OpenAI,
// Ollama, vLLM, OpenRouter, Groq, LM Studio, …
type Provider struct {
	id      string
	baseURL string
	apiKey  string
	org     string
	http    *http.Client
}

var _ providers.Provider = (*Provider)(nil)

// New returns a provider; the environment is read here, once.
func New(opts Options) *Provider {
	p := &Provider{id: opts.ID, baseURL: opts.BaseURL, apiKey: opts.APIKey, org: opts.Organization}
	if p.id == "" {
		p.id = ID
	}
	if p.baseURL == "" {
		p.baseURL = os.Getenv(EnvBaseURL)
	}
	if p.baseURL == "" {
		p.baseURL = defaultBaseURL
	}
	if p.apiKey == "" {
		p.apiKey = os.Getenv(EnvAPIKey)
	}
	base := opts.HTTPClient
	if base == nil {
		base = httperr.DefaultHTTPClient()
	}
	// Wrap the transport to see the headers of error responses (go-openai hides them).
	p.http = httperr.Wrap(base, nil)
	return p
}

// ID implements [providers.Provider].
func (p *Provider) ID() string { return p.id }

// BaseURL returns the API root the provider talks to unless a request overrides it.
func (p *Provider) BaseURL() string { return p.baseURL }

// Generate implements [providers.Provider]. It streams when onDelta is not nil.
func (p *Provider) Generate(ctx context.Context, req providers.Request, onDelta func(string) error) (providers.Response, error) {
	if err := ctx.Err(); err != nil {
		return providers.Response{}, err
	}
	client, baseURL, warnings, err := p.client(req.ModelOptions)
	if err != nil {
		return providers.Response{}, err
	}
	creq, more, err := buildRequest(p.id, req)
	if err != nil {
		return providers.Response{}, err
	}
	warnings = append(warnings, more...)

	h := &httperr.Capture{}
	ctx = httperr.WithCapture(ctx, h)
	var resp providers.Response
	if onDelta != nil {
		resp, err = streamCompletion(ctx, p.id, client, creq, onDelta, h, baseURL)
	} else {
		resp, err = complete(ctx, p.id, client, creq, h, baseURL)
	}
	if err != nil {
		return providers.Response{}, err
	}
	resp.Warnings = append(warnings, resp.Warnings...)
	return resp, nil
}

// client builds the go-openai client of one request, applying the per-request options.
//
// The provider's own key (and organization) is sent only to the provider's own server (same
// scheme and host): a request that sets baseURL to another server sends only the apiKey it sets
// itself, so a key meant for one server never leaks to another.
func (p *Provider) client(opts map[string]any) (*goopenai.Client, string, []providers.Warning, error) {
	var warnings []providers.Warning
	baseURL, key, org := p.baseURL, p.apiKey, p.org
	overridden := false
	var reqKey string
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v := opts[k]
		switch k {
		case optionBaseURL, optionAPIKey:
			s, ok := v.(string)
			if !ok && v != nil {
				return nil, "", nil, &contracts.Error{Code: contracts.CodeProviderConfiguration,
					Message: "model option '" + k + "' must be a string."}
			}
			if k == optionBaseURL && s != "" {
				baseURL, overridden = s, true
			} else if k == optionAPIKey {
				reqKey = s
			}
		default:
			warnings = append(warnings, providers.Warning{Type: providers.WarningUnsupported, Setting: "modelOptions." + k,
				Message: "The openai provider does not know model option '" + k + "' (known: baseURL, apiKey); it was ignored."})
		}
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", nil, &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: err,
			Message: "The base URL '" + baseURL + "' is not an http(s) URL: set it to the API root, e.g. http://localhost:11434/v1."}
	}
	if overridden && !sameOrigin(baseURL, p.baseURL) {
		key, org = "", ""
	}
	if reqKey != "" {
		key = reqKey
	}
	if key == "" && strings.EqualFold(u.Hostname(), "api.openai.com") {
		msg := EnvAPIKey + " is not set: export it (or set openai.Options.APIKey); for a local OpenAI-compatible server set " + EnvBaseURL
		if overridden {
			msg = "No API key for " + u.Redacted() + ": set the model option 'apiKey' along with 'baseURL'"
		}
		return nil, "", nil, &contracts.Error{Code: contracts.CodeProviderConfiguration, Message: msg,
			Details: map[string]any{"env": EnvAPIKey}}
	}
	cfg := goopenai.DefaultConfig(key)
	cfg.BaseURL = baseURL
	cfg.OrgID = org
	cfg.HTTPClient = p.http
	return goopenai.NewClientWithConfig(cfg), u.Redacted(), warnings, nil
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}
