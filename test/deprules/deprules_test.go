// Package deprules_test keeps the determinism boundary in the import graph: workflow-side
// packages never reach HTTP, activities, provider implementations, tools, the stream broker or
// model SDKs. The root providers package (the types of a model pass and the Provider
// interface, plain data) is workflow-side: hooks.Reason takes and returns its types.
package deprules_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kortyx-go/kortyx"

// workflowSide are the packages whose code runs as Temporal workflow code (or is imported by it).
var workflowSide = []string{
	module + "/contracts",
	module + "/hooks",
	module + "/internal/execution",
	module + "/internal/jsonstream",
	module + "/internal/protocol",
	module + "/internal/sessionstate",
	module + "/providers",
	module + "/workflows",
}

// forbidden may not be among a workflow-side package's dependencies, direct or not.
var forbidden = []string{
	module + "/activities",
	module + "/app",
	module + "/chat",
	module + "/devserver",
	module + "/examples",
	module + "/kortyxtest",
	module + "/httpwire",
	module + "/stream",
	module + "/tools",
	"github.com/sashabaranov/go-openai",
	"google.golang.org/genai",
	"github.com/modelcontextprotocol/go-sdk",
}

// forbiddenBelow are the packages whose subpackages may not be among a workflow-side package's
// dependencies, while the package itself may: the root providers package is plain data, its
// subpackages are the providers (net/http, model SDKs) and their fakes.
var forbiddenBelow = []string{module + "/providers"}

// notImported may not be imported by a workflow-side package itself (the Temporal SDK brings
// net/http in through gRPC, so only direct imports are checked). go.temporal.io/sdk/client is
// client-side code: it lives in the root package kortyx.
var notImported = []string{"net/http", "net/http/httptest", "go.temporal.io/sdk/client"}

// The client package holds no workflow code.
func TestClientPackageHoldsNoWorkflowCode(t *testing.T) {
	imports := goList(t, "-f", `{{join .Imports " "}}`, module)
	for _, imp := range []string{"go.temporal.io/sdk/workflow", module + "/internal/execution", module + "/hooks", module + "/workflows"} {
		if slices.Contains(imports, imp) {
			t.Errorf("the client package %s imports %s", module, imp)
		}
	}
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

func TestWorkflowSidePackagesStayDeterministic(t *testing.T) {
	for _, pkg := range workflowSide {
		t.Run(strings.TrimPrefix(pkg, module+"/"), func(t *testing.T) {
			for _, dep := range goList(t, "-deps", pkg) {
				for _, f := range forbidden {
					if dep == f || strings.HasPrefix(dep, f+"/") {
						t.Errorf("%s depends on %s", pkg, dep)
					}
				}
				for _, f := range forbiddenBelow {
					if strings.HasPrefix(dep, f+"/") {
						t.Errorf("%s depends on %s", pkg, dep)
					}
				}
			}
			for _, imp := range goList(t, "-f", `{{join .Imports " "}}`, pkg) {
				if slices.Contains(notImported, imp) {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
		})
	}
}

// The rule sees what it should: a package known to import net/http and go-openai fails it.
func TestRuleCatchesAViolation(t *testing.T) {
	deps := goList(t, "-deps", module+"/providers/openai")
	if !slices.ContainsFunc(deps, func(d string) bool { return strings.HasPrefix(d, "github.com/sashabaranov/go-openai") }) {
		t.Fatal("go list -deps does not list go-openai for providers/openai: the rule would see nothing")
	}
	if !slices.Contains(goList(t, "-f", `{{join .Imports " "}}`, module+"/chat"), "net/http") {
		t.Fatal("chat's imports do not list net/http: the rule would see nothing")
	}
	// A provider subpackage is caught by forbiddenBelow, the root package is not.
	if !slices.ContainsFunc(forbiddenBelow, func(f string) bool { return strings.HasPrefix(module+"/providers/openai", f+"/") }) {
		t.Fatal("forbiddenBelow does not cover providers/openai")
	}
	if slices.ContainsFunc(forbiddenBelow, func(f string) bool { return strings.HasPrefix(module+"/providers", f+"/") }) {
		t.Fatal("forbiddenBelow covers the root providers package, which workflow code may import")
	}
}

// starterForbidden may not be among the starter's dependencies: the first command of a fresh
// clone (go run ./starter demo) compiles everything the starter links, and these are what the
// demo does not need (the Anthropic and Google SDKs, the OpenTelemetry SDK, its exporters and
// Prometheus). The demo of an anthropic: or google: model runs the starter built with the tag
// kortyx_allproviders, the worker links them all.
var starterForbidden = []string{
	module + "/app/allproviders",
	module + "/providers/anthropic",
	module + "/providers/google",
	module + "/telemetry",
	"github.com/anthropics/anthropic-sdk-go",
	"google.golang.org/genai",
	"cloud.google.com/go",
	"github.com/google/s2a-go",
	"go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/exporters",
	"go.opentelemetry.io/proto",
	"github.com/prometheus",
}

func heavy(deps []string) []string {
	var found []string
	for _, dep := range deps {
		for _, f := range starterForbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				found = append(found, dep)
			}
		}
	}
	return found
}

// Issue 19 item 15: the starter's default build links none of starterForbidden; the build with
// every provider does link them (so the rule sees what it should).
func TestStarterLinksNoHeavyDependency(t *testing.T) {
	if found := heavy(goList(t, "-deps", module+"/starter")); len(found) > 0 {
		t.Errorf("the starter depends on %d packages it should not (what imports them?): %v", len(found), found)
	}
	all := goList(t, "-deps", "-tags", "kortyx_allproviders", module+"/starter")
	for _, want := range []string{module + "/providers/anthropic", module + "/providers/google", "google.golang.org/genai"} {
		if !slices.Contains(all, want) {
			t.Errorf("the starter built with -tags kortyx_allproviders does not link %s", want)
		}
	}
	if len(heavy(goList(t, "-deps", module+"/worker"))) == 0 {
		t.Error("the worker links none of starterForbidden: the rule would see nothing")
	}
	// The default worker links the provider SDKs; built with -tags kortyx_openaionly it links
	// none of them (it keeps telemetry).
	if !slices.Contains(goList(t, "-deps", module+"/worker"), "google.golang.org/genai") {
		t.Error("the default worker does not link google.golang.org/genai: the rule below would see nothing")
	}
	for _, dep := range goList(t, "-deps", "-tags", "kortyx_openaionly", module+"/worker") {
		for _, f := range []string{module + "/app/allproviders", module + "/providers/anthropic", module + "/providers/google",
			"github.com/anthropics/anthropic-sdk-go", "google.golang.org/genai", "cloud.google.com/go", "github.com/google/s2a-go"} {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("the worker built with -tags kortyx_openaionly links %s", dep)
			}
		}
	}
}

// kernelMayImport are the project packages outside internal/ that the kernel (internal/…) may
// import: the layers below it (contracts, and the root providers package, the types of a model
// pass). Everything above (hooks, workflows, stream, chat, app, the examples, the test rigs)
// builds on the kernel, never the other way round.
var kernelMayImport = []string{module + "/contracts", module + "/providers"}

// The kernel under internal/ imports nothing of a higher layer, in its code or its tests.
func TestKernelImportsNoHigherLayer(t *testing.T) {
	for _, pkg := range goList(t, module+"/internal/...") {
		t.Run(strings.TrimPrefix(pkg, module+"/"), func(t *testing.T) {
			imports := goList(t, "-f", `{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, pkg)
			for _, imp := range imports {
				if !strings.HasPrefix(imp, module+"/") || strings.HasPrefix(imp, module+"/internal/") || slices.Contains(kernelMayImport, imp) {
					continue
				}
				t.Errorf("%s imports %s, a higher layer", pkg, imp)
			}
		})
	}
}

// The session's state machine is pure: it needs nothing of the run's execution.
func TestSessionStateImportsNoExecution(t *testing.T) {
	pkg := module + "/internal/sessionstate"
	for _, dep := range goList(t, "-deps", "-test", pkg) {
		if dep == module+"/internal/execution" {
			t.Errorf("%s depends on %s", pkg, dep)
		}
	}
}

// wires are the packages that each translate one protocol to the session service.
var wires = []string{module + "/chat", module + "/aisdk", module + "/mcpserver", module + "/a2aserver", module + "/web", module + "/agui"}

// No wire depends on another: what they share is below them (sessions, httpwire), so a wire
// can change, or be left out of a program, on its own.
func TestNoWireImportsAnotherWire(t *testing.T) {
	for _, pkg := range wires {
		t.Run(strings.TrimPrefix(pkg, module+"/"), func(t *testing.T) {
			for _, dep := range goList(t, "-deps", pkg) {
				if dep != pkg && slices.Contains(wires, dep) {
					t.Errorf("the wire %s depends on the wire %s", pkg, dep)
				}
			}
		})
	}
}
