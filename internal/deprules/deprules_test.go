// Package deprules_test keeps the determinism boundary in the import graph: workflow-side
// packages never reach HTTP, activities, providers, tools, the stream broker or model SDKs.
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
	module + "/internal/httpapi",
	module + "/providers",
	module + "/stream",
	module + "/tools",
	"github.com/sashabaranov/go-openai",
	"google.golang.org/genai",
	"github.com/modelcontextprotocol/go-sdk",
}

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
}
