package mcpconformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/mcpserver"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// revision2026 is the stateless revision the server serves with StatelessRevision.
const revision2026 = "2026-07-28"

// TestServerScenarios20260728 runs the scenarios the suite requires of a 2026-07-28 server
// (--requirements 2026-07-28: the list frozen at the revision's release) against an MCP
// handler with StatelessRevision over a worker with the examples and the fixture agents, and
// checks them as TestServerScenarios does, against baseline-2026-07-28.yml.
func TestServerScenarios20260728(t *testing.T) {
	dir := filepath.Join(env.Root, "test", "mcpconformance")
	install(t, dir)
	bin := node(t, dir)
	baselinePath := filepath.Join(dir, "baseline-"+revision2026+".yml")
	baseline := readBaseline(t, baselinePath)

	set, err := examples.Parse("support,hello")
	require.NoError(t, err)
	register := func(reg *workflows.Registry) error {
		if err := set.Register(reg); err != nil {
			return err
		}
		if err := registerFixtures(reg); err != nil {
			return err
		}
		return registerFixtures2026(reg)
	}
	o := set.Options()
	o.Register = register
	o.FakeModel = fixtureResponder(o.FakeModel)
	tq := fmt.Sprintf("conformance-2026-%d", time.Now().UnixNano())
	r := testenv.Run(t, context.Background(), app.Config{TemporalAddress: env.Server.Address(), TaskQueue: tq,
		Namespace: "default", HTTPAddr: "127.0.0.1:0", FakeModels: true}, o)
	reg := workflows.NewRegistry()
	require.NoError(t, register(reg))
	svc, err := sessions.New(sessions.Options{Client: r.Client, Broker: r.Broker, Agents: reg, TaskQueue: tq})
	require.NoError(t, err)
	h, err := mcpserver.New(svc, mcpserver.Options{AllowUnauthenticated: true, StatelessRevision: true})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	out := t.TempDir()
	if d := os.Getenv("KORTYX_CONFORMANCE_OUT"); d != "" {
		out = filepath.Clean(d) + "-" + revision2026 // beside TestServerScenarios' <dir>
		require.NoError(t, os.MkdirAll(out, 0o755))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", srv.URL+"/mcp", "--requirements", revision2026, "--expected-failures", baselinePath, "--output-dir", out)
	cmd.Dir = t.TempDir()
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
	require.Contains(t, results, "input-required-result-basic-elicitation", "the suite ran no 2026-07-28 scenario; its output:\n%s", output.String())
	var ran []string
	for name, checks := range results {
		ran = append(ran, name)
		failed := failures(checks)
		reason, whole := baseline[name]
		switch {
		case whole && len(failed) == 0:
			t.Errorf("%s passes now: remove it from %s (its reason was %q)", name, filepath.Base(baselinePath), reason)
		case whole:
		default:
			for id, why := range failed {
				if _, ok := baseline[name+":"+id]; !ok {
					t.Errorf("%s fails: %s: %s", name, id, why)
				}
			}
			for _, c := range checks {
				if reason, ok := baseline[name+":"+c.ID]; ok && !isFailure(c) {
					t.Errorf("%s:%s passes now: remove it from %s (its reason was %q)", name, c.ID, filepath.Base(baselinePath), reason)
				}
			}
		}
	}
	for entry := range baseline {
		name, id, _ := strings.Cut(entry, ":")
		if !slices.Contains(ran, name) {
			t.Errorf("%s lists %s, whose scenario the suite did not run: remove it or fix its name", filepath.Base(baselinePath), entry)
		} else if id != "" && !slices.ContainsFunc(results[name], func(c check) bool { return c.ID == id }) {
			t.Errorf("%s lists %s, a check the scenario does not have: remove it or fix its name", filepath.Base(baselinePath), entry)
		}
	}
	slices.Sort(ran)
	t.Logf("%d scenarios ran: %s", len(ran), strings.Join(ran, ", "))
	if runErr != nil && !t.Failed() {
		t.Errorf("mcpconformance: the suite exited with %v although every scenario is as expected; its output:\n%s", runErr, output.String())
	}
}

// registerFixtures2026 adds the fixture agents of the 2026-07-28 input-required scenarios:
// each asks its questions as Kortyx interrupts (the question's id is the input request's key)
// and answers with the text the scenario looks for.
func registerFixtures2026(reg *workflows.Registry) error {
	const (
		nameSchema    = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
		confirmSchema = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
		colorSchema   = `{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`
	)
	// ask asks each question in turn and replies with reply of the answers.
	ask := func(questions [][3]string, reply func(answers []map[string]any) string) workflows.NodeFunc {
		return func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			var answers []map[string]any
			for _, q := range questions {
				a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: q[0], Kind: contracts.InterruptCustom, Question: q[1],
					Request: map[string]any{"question": q[1]}, SchemaID: q[0], ResponseSchema: contracts.MustCompileSchema(q[2])})
				if err != nil {
					return workflows.NodeResult{}, err
				}
				var v map[string]any
				if err := json.Unmarshal(a.Value, &v); err != nil {
					return workflows.NodeResult{}, err
				}
				answers = append(answers, v)
			}
			return workflows.NodeResult{UI: &workflows.UI{Message: reply(answers)}}, nil
		}
	}
	return reg.Add(
		agent("test_input_required_result_elicitation", "Asks a name (input-required-result-basic-elicitation).", noArguments,
			ask([][3]string{{"user_name", "What is your name?", nameSchema}}, func(a []map[string]any) string { return fmt.Sprintf("Hello, %v!", a[0]["name"]) })),
		agent("test_input_required_result_request_state", "Asks for a confirmation (input-required-result-request-state).", noArguments,
			ask([][3]string{{"confirm", "Please confirm", confirmSchema}}, func(a []map[string]any) string { return fmt.Sprintf("state-ok: confirmed %v", a[0]["ok"]) })),
		agent("test_input_required_result_multi_round", "Asks a name, then a color (input-required-result-multi-round).", noArguments,
			ask([][3]string{{"step1", "Step 1: What is your name?", nameSchema}, {"step2", "Step 2: What is your favorite color?", colorSchema}},
				func(a []map[string]any) string { return fmt.Sprintf("%v likes %v.", a[0]["name"], a[1]["color"]) })),
		agent("test_input_required_result_tampered_state", "Asks for a confirmation (input-required-result-tampered-state).", noArguments,
			ask([][3]string{{"confirm", "Please confirm", confirmSchema}}, func(a []map[string]any) string { return fmt.Sprintf("confirmed %v", a[0]["ok"]) })),
		agent("test_input_required_result_capabilities", "Asks a name (input-required-result-capability-check).", noArguments,
			ask([][3]string{{"user_name", "What is your name?", nameSchema}}, func(a []map[string]any) string { return fmt.Sprintf("Hello, %v!", a[0]["name"]) })),
	)
}
