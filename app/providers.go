package app

import (
	"fmt"
	"os"

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
	// for when none of Env is set (programs and demos without a key); where is the server's URL
	// and stop stops it. Nil:
	// the provider is not registered without its variables.
	Fake func(respond fake.Responder) (p providers.Provider, where string, stop func())
}

// ProviderInfo says how a provider of a [Backend] was configured (the start log lists them).
type ProviderInfo struct {
	ID string
	// Where is what it reaches: the API's base URL, or the URL of the fake server.
	Where string
	// Env are the variables that were set to configure it; none for a fake.
	Env []string
	// Fake: it answers from the program's script because none of its variables is set.
	Fake bool
}

// envProviders are the providers NewBackend registers from the environment, in this order. A
// provider package adds its entry here (one line calling its own ...FromEnv function).
var envProviders = []ProviderFromEnv{
	openAIFromEnv(),
	googleFromEnv(),
	anthropicFromEnv(),
}

func openAIFromEnv() ProviderFromEnv {
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

// fromEnv builds the providers of list whose variables are set, and the fakes of the others
// (answering with respond); stop stops the fake servers. A provider whose variables are set
// but wrong is an error (and the fakes started so far are stopped).
func fromEnv(list []ProviderFromEnv, respond fake.Responder) (ps []providers.Provider, infos []ProviderInfo, stop func(), err error) {
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
		case e.Fake != nil:
			p, where, s := e.Fake(respond)
			stops = append(stops, s)
			ps = append(ps, p)
			infos = append(infos, ProviderInfo{ID: e.ID, Where: where, Fake: true})
		}
	}
	return ps, infos, stop, nil
}

// String is the provider in a sentence of the start log.
func (i ProviderInfo) String() string {
	switch {
	case i.Fake:
		return fmt.Sprintf("%s: the scripted fake server at %s (none of its variables is set)", i.ID, i.Where)
	case len(i.Env) > 0:
		return fmt.Sprintf("%s: %s (from %v)", i.ID, i.Where, i.Env)
	}
	return fmt.Sprintf("%s: %s", i.ID, i.Where)
}
