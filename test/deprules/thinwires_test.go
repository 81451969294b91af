package deprules_test

import (
	"strings"
	"testing"
)

// thinWires are the wires that are built on the session service and package httpwire alone.
// The studio (package web) is not one yet: it still lists runs and reads their histories with
// the Temporal client itself.
var thinWires = []string{module + "/chat", module + "/aisdk", module + "/agui", module + "/mcpserver", module + "/a2aserver"}

// A thin wire's own code imports nothing under internal/ and not package workflows: what it
// needs of a run, a session or an agent it gets from the service, what it shares with other
// wires from httpwire, so that a wire written outside this module can do the same.
func TestThinWiresImportNoInternals(t *testing.T) {
	for _, pkg := range thinWires {
		t.Run(strings.TrimPrefix(pkg, module+"/"), func(t *testing.T) {
			for _, imp := range goList(t, "-f", `{{join .Imports " "}}`, pkg) {
				if strings.HasPrefix(imp, module+"/internal/") || imp == module+"/workflows" {
					t.Errorf("the wire %s imports %s", pkg, imp)
				}
			}
		})
	}
}
