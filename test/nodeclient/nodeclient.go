// Package nodeclient runs the Node scripts in test/npmclients, which drive the wires with each
// protocol's official client library from npm (the AI SDK's `ai`, `@modelcontextprotocol/sdk`,
// `@a2a-js/sdk`), from Go tests. [Install] runs `npm ci` there once per package-lock.json (a
// stamp in node_modules says which one is installed; a file lock keeps concurrent test
// processes from installing at once) and fails the test, never skips it, when Node or npm is
// missing. [Start] runs one script as a child process that talks JSON lines: every line it
// prints on stdout is an event ([Proc.Next]); every value the test sends ([Proc.Send]) is one
// line on its stdin.
//
// The npm packages are test dependencies only: nothing outside test/ needs Node.
package nodeclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/test/testenv"
)

// stamp is the file in node_modules that holds the sha256 of the package-lock.json installed.
const stamp = ".kortyx-lock-sha256"

// Dir is the directory of the scripts and their package.json.
func Dir(t testing.TB) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatalf("nodeclient: %v", err)
	}
	return filepath.Join(root, "test", "npmclients")
}

var installed sync.Once

// Install makes sure the packages of package-lock.json are installed (`npm ci`), once per
// process and once per lock file across processes. It fails t when Node or npm is missing or
// the install fails.
func Install(t testing.TB) {
	t.Helper()
	var failure string
	installed.Do(func() { failure = install(Dir(t)) })
	if failure != "" {
		t.Fatal(failure)
	}
	// A failed install of an earlier test of this process leaves no stamp: report it again.
	if !upToDate(Dir(t)) {
		t.Fatal("nodeclient: the npm packages of test/npmclients are not installed (an earlier `npm ci` failed)")
	}
}

// InstallDir is [Install] for the package-lock.json of another directory (the npm packages of
// another test's own): `npm ci` there once per lock file across processes, failing t when Node
// or npm is missing or the install fails.
func InstallDir(t testing.TB, dir string) {
	t.Helper()
	if failure := install(dir); failure != "" {
		t.Fatal(failure)
	}
}

func install(dir string) string {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("nodeclient: %s is not on PATH: the protocol tests drive the official npm clients with Node 20 or newer (install Node; `apt-get install nodejs npm`)", tool)
		}
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Sprintf("nodeclient: %v", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Sprintf("nodeclient: locking %s: %v", lock.Name(), err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if upToDate(dir) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("nodeclient: npm ci in %s: %v\n%s", dir, err, out)
	}
	sum, err := lockSum(dir)
	if err != nil {
		return fmt.Sprintf("nodeclient: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "node_modules", stamp), []byte(sum+"\n"), 0o644); err != nil {
		return fmt.Sprintf("nodeclient: %v", err)
	}
	return ""
}

func lockSum(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

func upToDate(dir string) bool {
	want, err := lockSum(dir)
	if err != nil {
		return false
	}
	got, err := os.ReadFile(filepath.Join(dir, "node_modules", stamp))
	return err == nil && strings.TrimSpace(string(got)) == want
}

// Event is one JSON line a script printed: its "event" field and the whole line.
type Event struct {
	Name string `json:"event"`
	Raw  json.RawMessage
}

// Decode decodes the event's line into v.
func (e Event) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(e.Raw, v); err != nil {
		t.Fatalf("nodeclient: decoding %s: %v", e.Raw, err)
	}
}

// Proc is a running script.
type Proc struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan Event
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// Start runs `node <script> args...` in [Dir] with env added to the test's environment, after
// [Install]. The process is killed at the latest when the test ends; its stderr is in the test's
// failure messages.
func Start(t testing.TB, script string, env map[string]string, args ...string) *Proc {
	t.Helper()
	Install(t)
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = Dir(t)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Proc{t: t, name: script, cmd: cmd, events: make(chan Event, 256), stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("nodeclient: starting node %s: %v", script, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			e := Event{Raw: append(json.RawMessage(nil), line...)}
			if json.Unmarshal(line, &e) != nil || e.Name == "" {
				e = Event{Name: "output", Raw: mustJSON(map[string]string{"event": "output", "line": string(line)})}
			}
			p.events <- e
		}
		p.err = cmd.Wait()
		close(p.events)
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// Next returns the script's next event that is not "output" (a line that is no event: they are
// logged), failing the test when none comes within timeout or the script ends first.
func (p *Proc) Next(timeout time.Duration) Event {
	p.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e, ok := <-p.events:
			if !ok {
				p.t.Fatalf("nodeclient: %s ended (%v) before its next event; stderr:\n%s", p.name, p.err, p.stderr.String())
			}
			if e.Name == "output" {
				p.t.Logf("%s: %s", p.name, e.Raw)
				continue
			}
			return e
		case <-deadline:
			p.t.Fatalf("nodeclient: no event from %s within %v; stderr:\n%s", p.name, timeout, p.stderr.String())
		}
	}
}

// Expect returns the next event, failing the test when it is not named name (an "error"
// event's line is in the message).
func (p *Proc) Expect(name string, timeout time.Duration) Event {
	p.t.Helper()
	e := p.Next(timeout)
	if e.Name != name {
		p.t.Fatalf("nodeclient: %s: want event %q, got %s; stderr:\n%s", p.name, name, e.Raw, p.stderr.String())
	}
	return e
}

// Send writes v as one JSON line on the script's stdin.
func (p *Proc) Send(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("nodeclient: writing to %s: %v; stderr:\n%s", p.name, err, p.stderr.String())
	}
}

// CloseInput closes the script's stdin: its next read of a command returns nothing.
func (p *Proc) CloseInput() { _ = p.stdin.Close() }

// Wait closes the script's stdin, waits up to timeout for it to end and fails the test unless it exits 0
// with no event left unread.
func (p *Proc) Wait(timeout time.Duration) {
	p.t.Helper()
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("nodeclient: %s did not end within %v; stderr:\n%s", p.name, timeout, p.stderr.String())
	}
	for e := range p.events {
		if e.Name != "output" {
			p.t.Errorf("nodeclient: %s: an event nobody read: %s", p.name, e.Raw)
		}
	}
	if p.err != nil {
		p.t.Fatalf("nodeclient: %s: %v; stderr:\n%s", p.name, p.err, p.stderr.String())
	}
}

// Stderr is what the script wrote on stderr so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

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
