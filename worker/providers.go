package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/providers"
)

// openAIOnlyTag is the build tag of a worker that links the OpenAI wire alone (OpenAI and
// OpenAI-compatible servers): no Anthropic or Google SDK, a shorter cold build and a smaller
// binary (docs/performance.md, "Cold builds").
const openAIOnlyTag = "kortyx_openaionly"

// unlinked returns the providers a worker built with [openAIOnlyTag] does not link, under their
// ids and variables as allproviders.FromEnv lists them (a test keeps the two lists equal): a
// worker whose environment sets one of their variables refuses to start and says how to build
// a worker that serves it, instead of ignoring the variable. None set, in dev mode or with
// KORTYX_FAKE_MODELS=1, the fake model answers under their ids as in the default build.
func unlinked() []app.ProviderFromEnv {
	list := []app.ProviderFromEnv{
		{ID: "google", Env: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI"}},
		{ID: "anthropic", Env: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}},
	}
	for i := range list {
		p := &list[i]
		p.Hint = "in a worker built without -tags " + openAIOnlyTag
		id, env := p.ID, p.Env
		p.New = func() (providers.Provider, string, error) {
			var set []string
			for _, v := range env {
				if os.Getenv(v) != "" {
					set = append(set, v)
				}
			}
			return nil, "", fmt.Errorf("kortyx worker: %s is set, but this worker was built with -tags %s and links the OpenAI wire alone, not the %s provider: build it without the tag (go build ./worker), or unset %s",
				strings.Join(set, " and "), openAIOnlyTag, id, strings.Join(set, " and "))
		}
	}
	return list
}
