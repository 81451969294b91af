//go:build unix

package devserver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGo puts a "go" on PATH (and nothing else) that prints its arguments and one package the
// way "go install -v" does, waits for the file $FAKE_GO_RELEASE when it is set, and writes a
// temporal binary into $GOBIN, or fails with exit code 3 when $FAKE_GO_FAIL is set.
func fakeGo(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
echo "go $*"
echo "github.com/temporalio/cli/internal/temporalcli" >&2
if [ -n "$FAKE_GO_FAIL" ]; then echo "build failed" >&2; exit 3; fi
if [ -n "$FAKE_GO_RELEASE" ]; then
	while [ ! -e "$FAKE_GO_RELEASE" ]; do sleep 0.01; done
fi
printf '#!/bin/sh\n' > "$GOBIN/temporal"
chmod +x "$GOBIN/temporal"
`
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/bin"+string(os.PathListSeparator)+"/usr/bin")
	t.Setenv(envCLIPath, "")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, out *syncBuffer, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), what) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the install output:\n%s", what, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFindOrInstallShowsProgress(t *testing.T) {
	fakeGo(t)
	ticks := make(chan time.Time)
	stopped := false
	orig := installTicker
	installTicker = func() (<-chan time.Time, func()) { return ticks, func() { stopped = true } }
	t.Cleanup(func() { installTicker = orig })
	root := t.TempDir()
	release := filepath.Join(t.TempDir(), "release")
	t.Setenv("FAKE_GO_RELEASE", release)

	out := &syncBuffer{}
	type result struct {
		path string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		p, err := FindOrInstall(context.Background(), root, out)
		done <- result{p, err}
	}()
	waitFor(t, out, "temporalcli\n")
	ticks <- time.Now() // one elapsed-time line per tick
	waitFor(t, out, "elapsed)\n")
	ticks <- time.Now()
	waitFor(t, out, "elapsed)\nkortyx: still")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("FindOrInstall: %v\n%s", r.err, out.String())
	}
	bin := filepath.Join(root, ".tools", "bin")
	if want := filepath.Join(bin, "temporal"); r.path != want {
		t.Fatalf("path %q, want %q", r.path, want)
	}
	if !stopped {
		t.Fatal("the ticker was not stopped")
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		regexp.QuoteMeta("kortyx: installing the Temporal CLI into " + bin + " (go install -v " + cliModule + "@" + cliVersion + "); this takes a few minutes, once"),
		regexp.QuoteMeta("go install -v " + cliModule + "@" + cliVersion),
		regexp.QuoteMeta("github.com/temporalio/cli/internal/temporalcli"),
		`kortyx: still installing the Temporal CLI \(\d+s elapsed\)`,
		`kortyx: still installing the Temporal CLI \(\d+s elapsed\)`,
		regexp.QuoteMeta("kortyx: installed "+r.path+" in ") + `\d+s`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, re := range want {
		if !regexp.MustCompile("^" + re + "$").MatchString(lines[i]) {
			t.Errorf("line %d: %q does not match %s", i+1, lines[i], re)
		}
	}
	// Found now: no second install, no output.
	out2 := &syncBuffer{}
	p, err := FindOrInstall(context.Background(), root, out2)
	if err != nil || p != r.path || out2.String() != "" {
		t.Fatalf("second FindOrInstall: %q, %v, output %q", p, err, out2.String())
	}
}

func TestInstallFailureSaysHowToInstallByHand(t *testing.T) {
	fakeGo(t)
	t.Setenv("FAKE_GO_FAIL", "1")
	root := t.TempDir()
	out := &syncBuffer{}
	_, err := install(context.Background(), root, out)
	if err == nil {
		t.Fatal("Install succeeded with a failing go command")
	}
	bin := filepath.Join(root, ".tools", "bin")
	want := "kortyx: installing temporal CLI failed; run by hand: GOBIN=" + bin + " go install " + cliModule + "@" + cliVersion + ": exit status 3"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if !strings.HasSuffix(out.String(), "build failed\n") {
		t.Fatalf("the go command's output is not shown:\n%s", out.String())
	}
}
