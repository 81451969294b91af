package mcpconformance_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	e, err := testenv.Start("the MCP conformance tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env = e
	code := m.Run()
	e.Close()
	os.Exit(code)
}

// specVersion is the newest protocol version the server negotiates: the suite runs every
// server scenario of it and of the versions before (--spec-version is cumulative).
const specVersion = "2025-11-25"

// TestServerScenarios runs the suite's server scenarios against the development API's /mcp
// (app.Run with the support and hello examples, the fixture agents, the fake model) and
// checks every scenario's checks: a check fails with FAILURE or WARNING, as the suite counts
// them; a scenario outside baseline.yml passes, a scenario in it fails (else the baseline is
// stale), a check listed as "<scenario>:<check id>" fails and is the only one of its
// scenario that may; every entry has its reason.
func TestServerScenarios(t *testing.T) {
	dir := filepath.Join(env.Root, "test", "mcpconformance")
	install(t, dir)
	bin := node(t, dir)
	baseline := readBaseline(t, filepath.Join(dir, "baseline.yml"))

	set, err := examples.Parse("support,hello")
	require.NoError(t, err)
	o := set.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := set.Register(reg); err != nil {
			return err
		}
		return registerFixtures(reg)
	}
	o.FakeModel = fixtureResponder(o.FakeModel)
	r := testenv.Run(t, context.Background(), app.Config{TemporalAddress: env.Server.Address(), TaskQueue: fmt.Sprintf("conformance-%d", time.Now().UnixNano()),
		Namespace: "default", HTTPAddr: "127.0.0.1:0", FakeModels: true}, o)

	out := t.TempDir()
	if d := os.Getenv("KORTYX_CONFORMANCE_OUT"); d != "" {
		out = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", "http://"+r.HTTPAddr+"/mcp", "--suite", "all", "--spec-version", specVersion,
		"--expected-failures", filepath.Join(dir, "baseline.yml"), "--output-dir", out)
	cmd.Dir = t.TempDir() // the CLI writes nothing else, but not into the module either
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	runErr := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mcpconformance: the suite did not end within 3 minutes; its output:\n%s", output.String())
	}
	t.Logf("the suite's summary:\n%s", summary(output.String()))

	results := readResults(t, out)
	require.Contains(t, results, "server-initialize", "the suite ran no scenario; its output:\n%s", output.String())
	require.Contains(t, results, "tools-call-elicitation", "the suite ran no 2025-11-25 tool scenario; its output:\n%s", output.String())
	var ran []string
	for name, checks := range results {
		ran = append(ran, name)
		failed := failures(checks)
		reason, whole := baseline[name]
		switch {
		case whole && len(failed) == 0:
			t.Errorf("%s passes now: remove it from test/mcpconformance/baseline.yml (its reason was %q)", name, reason)
		case whole:
		default:
			// Checks of the scenario the baseline expects to fail, one by one.
			for id, reason := range failed {
				if _, ok := baseline[name+":"+id]; !ok {
					t.Errorf("%s fails: %s: %s", name, id, reason)
				}
			}
			for _, c := range checks {
				if reason, ok := baseline[name+":"+c.ID]; ok && !isFailure(c) {
					t.Errorf("%s:%s passes now: remove it from test/mcpconformance/baseline.yml (its reason was %q)", name, c.ID, reason)
				}
			}
		}
	}
	for entry := range baseline {
		name, id, _ := strings.Cut(entry, ":")
		if !slices.Contains(ran, name) {
			t.Errorf("baseline.yml lists %s, whose scenario the suite did not run: remove it or fix its name", entry)
		} else if id != "" && !slices.ContainsFunc(results[name], func(c check) bool { return c.ID == id }) {
			t.Errorf("baseline.yml lists %s, a check the scenario does not have: remove it or fix its name", entry)
		}
	}
	slices.Sort(ran)
	t.Logf("%d scenarios ran: %s", len(ran), strings.Join(ran, ", "))
	if runErr != nil && !t.Failed() {
		t.Errorf("mcpconformance: the suite exited with %v although every scenario is as expected; its output:\n%s", runErr, output.String())
	}
}

// check is one check of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED, INFO
	ErrorMessage string `json:"errorMessage"`
}

// isFailure reports whether a check failed: FAILURE, or WARNING (a SHOULD of the spec), as the
// suite counts them.
func isFailure(c check) bool { return c.Status == "FAILURE" || c.Status == "WARNING" }

// failures are a scenario's failed checks: id → message.
func failures(checks []check) map[string]string {
	out := map[string]string{}
	for _, c := range checks {
		if isFailure(c) {
			out[c.ID] = c.Status + ": " + c.ErrorMessage
		}
	}
	return out
}

// resultDir is the name of a scenario's results directory: server-<scenario>-<timestamp>.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readResults reads the checks of every scenario the suite ran (a directory of its own each).
func readResults(t *testing.T, out string) map[string][]check {
	t.Helper()
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	results := map[string][]check{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		require.NotNil(t, m, "an unexpected entry in the suite's output directory: %s", e.Name())
		b, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		require.NoError(t, err)
		var checks []check
		require.NoError(t, json.Unmarshal(b, &checks), "%s", e.Name())
		require.NotContains(t, results, m[1], "scenario %s ran twice", m[1])
		results[m[1]] = checks
	}
	return results
}

// baselineEntry is a line of baseline.yml's server list: "  - <scenario> # <reason>", or
// "  - <scenario>:<check id> # <reason>" for one check of a scenario.
var baselineEntry = regexp.MustCompile(`^  - ([a-z0-9-]+(?::[A-Za-z0-9_$.-]+)?)(?:\s+#\s*(.*))?$`)

// readBaseline returns the entries of baseline.yml's server list and their reasons, failing
// t for an entry without a reason or a line it does not understand.
func readBaseline(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	section := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		case line == "server:":
			section = "server"
		case section == "server" && baselineEntry.MatchString(line):
			m := baselineEntry.FindStringSubmatch(line)
			require.NotEmpty(t, strings.TrimSpace(m[2]), "baseline.yml:%d: %s has no reason (a comment after it)", n, m[1])
			require.NotContains(t, out, m[1], "baseline.yml:%d: %s is listed twice", n, m[1])
			out[m[1]] = m[2]
		default:
			t.Fatalf("baseline.yml:%d: not a server entry (\"  - <scenario>[:<check id>] # <reason>\"): %q", n, line)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// summary is the part of the suite's output from its summary on.
func summary(output string) string {
	if i := strings.Index(output, "=== SUMMARY ==="); i >= 0 {
		return output[i:]
	}
	return output
}
