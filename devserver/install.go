package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

const (
	// cliModule is the Go package path of the Temporal CLI.
	cliModule = "github.com/temporalio/cli/cmd/temporal"
	// cliVersion is the pinned Temporal CLI version. Newer versions do not
	// build offline with the module cache this project ships with.
	cliVersion = "v1.5.1"
	// envCLIPath names the environment variable that, when set, overrides where
	// [Find] looks for the temporal binary.
	envCLIPath = "TEMPORAL_CLI_PATH"
)

// errNotFound is wrapped by [Find]'s error when no temporal binary exists in any of the places
// it looks (and only then does [FindOrInstall] install one).
var errNotFound = errors.New("temporal CLI not found")

// Find locates the temporal binary. It checks, in order:
//
//  1. $TEMPORAL_CLI_PATH, which, if set, must name an executable file;
//  2. <root>/.tools/bin/temporal;
//  3. "temporal" on $PATH.
//
// root is the project directory; "" means the current directory. If nothing
// is found the error says how to install the CLI ([FindOrInstall] installs it then).
func Find(root string) (string, error) {
	if p := os.Getenv(envCLIPath); p != "" {
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("kortyx: $%s=%q is not usable (%w); point it at a temporal binary or unset it", envCLIPath, p, err)
		}
		return p, nil
	}
	bin, err := binDir(root)
	if err != nil {
		return "", err
	}
	local := filepath.Join(bin, exeName("temporal"))
	if checkExecutable(local) == nil {
		return local, nil
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("kortyx: %w (looked in $%s, %s and $PATH); call devserver.FindOrInstall or run: GOBIN=%s go install %s@%s",
		errNotFound, envCLIPath, local, bin, cliModule, cliVersion)
}

// install builds the Temporal CLI (cliModule@cliVersion) into <root>/.tools/bin: see
// [FindOrInstall].
func install(ctx context.Context, root string, out io.Writer) (string, error) {
	if out == nil {
		out = io.Discard
	}
	bin, err := binDir(root)
	if err != nil {
		return "", err
	}
	target := cliModule + "@" + cliVersion
	w := &lockedWriter{w: out}
	fmt.Fprintf(w, "kortyx: installing the Temporal CLI into %s (go install -v %s); this takes a few minutes, once\n", bin, target)
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", fmt.Errorf("kortyx: installing temporal CLI: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "install", "-v", target)
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	ticks, stop := installTicker()
	defer stop()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("kortyx: installing temporal CLI: starting go install (is the go command on $PATH?): %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
wait:
	for {
		select {
		case <-ticks:
			fmt.Fprintf(w, "kortyx: still installing the Temporal CLI (%s elapsed)\n", time.Since(start).Round(time.Second))
		case err = <-done:
			break wait
		}
	}
	if err != nil {
		return "", fmt.Errorf("kortyx: installing temporal CLI failed; run by hand: GOBIN=%s go install %s: %w", bin, target, err)
	}
	path := filepath.Join(bin, exeName("temporal"))
	if err := checkExecutable(path); err != nil {
		return "", fmt.Errorf("kortyx: go install %s succeeded but %s is not usable: %w", target, path, err)
	}
	fmt.Fprintf(w, "kortyx: installed %s in %s\n", path, time.Since(start).Round(time.Second))
	return path, nil
}

// installTicker paces install's elapsed-time lines (a variable so that tests tick by hand).
var installTicker = func() (<-chan time.Time, func()) {
	t := time.NewTicker(15 * time.Second)
	return t.C, t.Stop
}

// lockedWriter serializes the go command's output and the elapsed-time lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// FindOrInstall returns the binary [Find] locates or, if there is none, builds the pinned
// Temporal CLI (v1.5.1) into <root>/.tools/bin with "go install -v", streaming the go
// command's output (the packages as it builds them) to out, with a line saying how long it has
// been running every 15 seconds, and returns the installed binary; out nil discards all of it.
// root is the project directory ("": the current directory). The install needs the go command
// on $PATH and takes a few minutes, once. A $TEMPORAL_CLI_PATH naming a missing file is
// reported as an error rather than silently replaced by an install.
func FindOrInstall(ctx context.Context, root string, out io.Writer) (string, error) {
	p, err := Find(root)
	if err == nil || !errors.Is(err, errNotFound) {
		return p, err
	}
	return install(ctx, root, out)
}

// binDir returns the absolute <root>/.tools/bin directory.
func binDir(root string) (string, error) {
	abs, err := filepath.Abs(root) // Abs("") is the working directory.
	if err != nil {
		return "", fmt.Errorf("kortyx: resolving project directory %q: %w", root, err)
	}
	return filepath.Join(abs, ".tools", "bin"), nil
}

func exeName(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// checkExecutable reports why path is not an executable regular file.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: %w: not executable", path, fs.ErrPermission)
	}
	return nil
}
