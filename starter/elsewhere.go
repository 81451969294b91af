package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// allProvidersTag is the build tag of the starter that links every model provider.
const allProvidersTag = "kortyx_allproviders"

// needsAllProviders reports whether the demo's default model (--model, else KORTYX_MODEL) is
// of a provider this build does not link: anthropic or google.
func needsAllProviders(model string) (provider string, ok bool) {
	if allProviders {
		return "", false
	}
	if model == "" {
		model = os.Getenv("KORTYX_MODEL")
	}
	if p, _, found := strings.Cut(model, ":"); found && (p == "anthropic" || p == "google") {
		return p, true
	}
	return "", false
}

// demoElsewhere runs the demo (args as given) in the starter built with every provider: it
// builds github.com/kortyx-go/kortyx/starter with the tag kortyx_allproviders (from the module
// of the working directory: the checkout, or a module that requires Kortyx) into a temporary
// directory, runs it with this process's standard streams and environment, and exits with its
// exit status. Nothing has been started here yet.
func demoElsewhere(p *printer, provider string, args []string) error {
	p.note("%s models need the starter built with every provider (this one links the OpenAI wire alone, for a short first build): building it with -tags %s", provider, allProvidersTag)
	dir, err := os.MkdirTemp("", "kortyx-starter-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "starter")
	var out bytes.Buffer
	build := exec.Command("go", "build", "-tags", allProvidersTag, "-o", bin, "github.com/kortyx-go/kortyx/starter")
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		return fmt.Errorf("kortyx: building the starter with every provider (go build -tags %s github.com/kortyx-go/kortyx/starter, run from the Kortyx checkout or a module that requires it) failed: %w\n%s",
			allProvidersTag, err, strings.TrimSpace(out.String()))
	}
	cmd := exec.Command(bin, append([]string{"demo"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Ctrl-C reaches both processes (one process group): this one waits for the demo to end.
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		_ = os.RemoveAll(dir)
		os.Exit(ee.ExitCode()) // the demo said why on stderr
	}
	return err
}
