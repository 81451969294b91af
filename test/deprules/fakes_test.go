package deprules_test

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The fake HTTP servers of the providers' wires: test support, exported for users' tests.
var fakeServers = []string{
	module + "/providers/fakeserver",
	module + "/providers/anthropic/fakeanthropic",
	module + "/providers/google/fakegemini",
}

// testSupport are the public packages that may import the fake servers: the servers
// themselves (none imports another today) and the providers' conformance suite, which runs
// against them.
var testSupport = append([]string{module + "/providers/conformance"}, fakeServers...)

// A production binary links no fake server: the worker answers without a key from the
// in-process fake model (providers/fake), never from a server of a wire it starts.
func TestWorkerLinksNoFakeServer(t *testing.T) {
	for _, prog := range []string{module + "/worker", module + "/examples/chatserver/cmd/chatserver", module + "/starter"} {
		deps := goList(t, "-deps", prog)
		require(t, slices.Contains(deps, module+"/providers/fake"), "%s does not link providers/fake: the rule checks nothing", prog)
		for _, f := range fakeServers {
			if slices.Contains(deps, f) {
				t.Errorf("%s links the fake server %s", prog, f)
			}
		}
	}
}

// No public package but the test support imports a fake server (test rigs under test/ and
// tests may).
func TestOnlyTestSupportImportsFakeServers(t *testing.T) {
	checked := 0
	for _, line := range goList(t, "-f", `{{if ne .Name "main"}}{{.ImportPath}}={{join .Imports ","}}{{end}}`, module+"/...") {
		pkg, imports, _ := strings.Cut(line, "=")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		if !isPublic(rel) || slices.Contains(testSupport, pkg) {
			continue
		}
		checked++
		for _, imp := range strings.Split(imports, ",") {
			if slices.Contains(fakeServers, imp) {
				t.Errorf("the public package %s imports the fake server %s; use providers/fake, or move the code to test support", pkg, imp)
			}
		}
	}
	require(t, checked > 20, "only %d public packages checked", checked)
}

// worker/main.go stays a page a samples-go reader takes in at once: flags, examples, app.Run.
func TestWorkerMainIsShort(t *testing.T) {
	root := strings.TrimSpace(strings.Join(goList(t, "-m", "-f", "{{.Dir}}"), ""))
	src, err := os.ReadFile(root + "/worker/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "\n"); n > 60 {
		t.Errorf("worker/main.go has %d lines; at most 60: the composition belongs in app.Run", n)
	}
}

func require(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}
