package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/openai"
)

// ProviderFromEnv is how [NewBackend] builds one model provider from the environment.
type ProviderFromEnv struct {
	// ID is the provider id, the prefix of the model names it answers ("openai:gpt-4.1-mini").
	ID string
	// Env are the variables that configure it (a key, a base URL): the provider is built with
	// New when any of them is set.
	Env []string
	// New builds the provider from the environment; where says what it reaches, for the start
	// log (the API's base URL; never a key).
	New func() (p providers.Provider, where string, err error)
	// Fake, when set, builds the provider against a fake server of its wire playing respond,
	// for when none of Env is set and fakes are asked for ([BackendOptions.FakeServers]: dev
	// mode, the demo, KORTYX_FAKE_MODELS=1); where is the server's URL and stop stops it. Nil:
	// the provider is not registered without its variables.
	Fake func(respond fake.Responder) (p providers.Provider, where string, stop func())
	// Hint, when set, is said after the variables in the error of a program with no provider
	// configured (e.g. the Vertex AI variables that go with GOOGLE_GENAI_USE_VERTEXAI).
	Hint string
}

// ProviderInfo says how a provider of a [Backend] was configured (the start log lists them).
type ProviderInfo struct {
	ID string
	// Where is what it reaches: the API's base URL, or the URL of the fake server.
	Where string
	// Env are the variables that were set to configure it; none for a fake.
	Env []string
	// Fake: it answers from the program's script (a fake server because none of its variables
	// is set, or the in-process scripted model "fake").
	Fake bool
}

// OpenAIFromEnv is the "openai" provider: OpenAI, or any OpenAI-compatible server, as
// OPENAI_API_KEY and OPENAI_BASE_URL configure it, or a fake OpenAI-compatible server. It is
// the provider of [BackendOptions.Providers] when that is nil; the package allproviders adds
// Anthropic and Google (Gemini, Vertex AI).
func OpenAIFromEnv() ProviderFromEnv {
	return ProviderFromEnv{
		ID:  openai.ID,
		Env: []string{openai.EnvAPIKey, openai.EnvBaseURL},
		New: func() (providers.Provider, string, error) {
			p := openai.New(openai.Options{})
			return p, p.BaseURL(), nil
		},
		Fake: func(respond fake.Responder) (providers.Provider, string, func()) {
			srv := fakeserver.New(respond)
			return openai.New(openai.Options{BaseURL: srv.URL()}), srv.URL(), srv.Close
		},
	}
}

// fromEnv builds the providers of list whose variables are set, and, when fakes is set, the
// fakes of the others (answering with respond); stop stops the fake servers. A provider whose
// variables are set but wrong is an error (and the fakes started so far are stopped).
func fromEnv(list []ProviderFromEnv, respond fake.Responder, fakes bool) (ps []providers.Provider, infos []ProviderInfo, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for _, e := range list {
		var set []string
		for _, v := range e.Env {
			if os.Getenv(v) != "" {
				set = append(set, v)
			}
		}
		switch {
		case len(set) > 0:
			p, where, err := e.New()
			if err != nil {
				stop()
				return nil, nil, func() {}, err
			}
			ps = append(ps, p)
			infos = append(infos, ProviderInfo{ID: e.ID, Where: where, Env: set})
		case fakes && e.Fake != nil:
			p, where, s := e.Fake(respond)
			stops = append(stops, s)
			ps = append(ps, p)
			infos = append(infos, ProviderInfo{ID: e.ID, Where: where, Fake: true})
		}
	}
	return ps, infos, stop, nil
}

// NoProviderError is the error of [NewBackend] when no provider of the environment is
// configured and no fake server is asked for: a worker outside dev mode would otherwise answer
// every run from the demo's script. Its message names the variables of each provider.
type NoProviderError struct {
	Providers []ProviderFromEnv
}

func (e *NoProviderError) Error() string {
	var b strings.Builder
	b.WriteString("kortyx: no model provider is configured: set ")
	for i, p := range e.Providers {
		if i > 0 {
			b.WriteString("; or ")
		}
		fmt.Fprintf(&b, "%s (%s)", strings.Join(p.Env, " or "), p.ID)
		if p.Hint != "" {
			b.WriteString(", " + p.Hint)
		}
	}
	b.WriteString(". To answer from the scripted fake model servers instead (tests, demos), set KORTYX_FAKE_MODELS=1")
	return b.String()
}

// String is the provider in a sentence of the start log.
func (i ProviderInfo) String() string {
	switch {
	case i.ID == fake.ID:
		return fmt.Sprintf("%s: %s", i.ID, i.Where)
	case i.Fake:
		return fmt.Sprintf("%s: the scripted fake server at %s (none of its variables is set)", i.ID, i.Where)
	case len(i.Env) > 0:
		return fmt.Sprintf("%s: %s (from %v)", i.ID, i.Where, i.Env)
	}
	return fmt.Sprintf("%s: %s", i.ID, i.Where)
}
