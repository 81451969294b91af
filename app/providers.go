package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/openai"
)

// ProviderFromEnv is how [Run] builds one model provider from the environment
// ([Options.Providers]; package allproviders lists those of the repository).
type ProviderFromEnv struct {
	// ID is the provider id, the prefix of the model names it answers ("openai:gpt-4.1-mini").
	ID string
	// Env are the variables that configure it (a key, a base URL): the provider is built with
	// New when any of them is set. When none is set, in dev mode or with KORTYX_FAKE_MODELS=1,
	// the in-process fake model (package providers/fake) answers under its id instead.
	Env []string
	// New builds the provider from the environment; where says what it reaches, for the start
	// log (the API's base URL; never a key).
	New func() (p providers.Provider, where string, err error)
	// Hint, when set, is said after the variables in the error of a program with no provider
	// configured (e.g. the Vertex AI variables that go with GOOGLE_GENAI_USE_VERTEXAI).
	Hint string
}

// inProcess is where a fake provider answers, in the start log.
const inProcess = "the in-process scripted model"

// providerInfo says how a provider of a [backend] was configured (the start log lists them).
type providerInfo struct {
	ID string
	// Where is what it reaches: the API's base URL, or [inProcess].
	Where string
	// Env are the variables that were set to configure it; none for a fake.
	Env []string
	// Fake: it answers from the program's script (the in-process fake model, standing in for
	// a provider none of whose variables is set, or the provider "fake").
	Fake bool
}

// openAIFromEnv is the "openai" provider: OpenAI, or any OpenAI-compatible server, as
// OPENAI_API_KEY and OPENAI_BASE_URL configure it. [Run] always lists it first.
func openAIFromEnv() ProviderFromEnv {
	return ProviderFromEnv{
		ID:  openai.ID,
		Env: []string{openai.EnvAPIKey, openai.EnvBaseURL},
		New: func() (providers.Provider, string, error) {
			p := openai.New(openai.Options{})
			return p, p.BaseURL(), nil
		},
	}
}

// fromEnv builds the providers of list whose variables are set, and, when fakes is set, an
// in-process fake model playing respond under the id of each of the others. A provider whose
// variables are set but wrong is an error.
func fromEnv(list []ProviderFromEnv, respond fake.Responder, fakes bool) (ps []providers.Provider, infos []providerInfo, err error) {
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
				return nil, nil, err
			}
			ps = append(ps, p)
			infos = append(infos, providerInfo{ID: e.ID, Where: where, Env: set})
		case fakes:
			ps = append(ps, fake.NewResponder(respond).WithID(e.ID))
			infos = append(infos, providerInfo{ID: e.ID, Where: inProcess, Fake: true})
		}
	}
	return ps, infos, nil
}

// noProviderError is the error of [newBackend] when no provider of the environment is
// configured and no fake is asked for: a worker outside dev mode would otherwise answer every
// run from the demo's script. Its message names the variables of each provider.
type noProviderError struct {
	providers []ProviderFromEnv
}

func (e *noProviderError) Error() string {
	var b strings.Builder
	b.WriteString("kortyx: no model provider is configured: set ")
	for i, p := range e.providers {
		if i > 0 {
			b.WriteString("; or ")
		}
		fmt.Fprintf(&b, "%s (%s)", strings.Join(p.Env, " or "), p.ID)
		if p.Hint != "" {
			b.WriteString(", " + p.Hint)
		}
	}
	b.WriteString(". To answer from the scripted fake model instead (tests, demos), set KORTYX_FAKE_MODELS=1")
	return b.String()
}

// String is the provider in a sentence of the start log.
func (i providerInfo) String() string {
	switch {
	case i.ID == fake.ID:
		return fmt.Sprintf("%s: %s", i.ID, i.Where)
	case i.Fake:
		return fmt.Sprintf("%s: %s (none of its variables is set)", i.ID, i.Where)
	case len(i.Env) > 0:
		return fmt.Sprintf("%s: %s (from %v)", i.ID, i.Where, i.Env)
	}
	return fmt.Sprintf("%s: %s", i.ID, i.Where)
}
