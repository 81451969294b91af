package docscheck

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestModuleReadyToTag: go.mod has no replace directive and no toolchain line, and every package
// with code has a package doc.
func TestModuleReadyToTag(t *testing.T) {
	root := moduleRoot(t)
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct {
		Go        string
		Toolchain string
		Replace   []any
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	if len(mod.Replace) > 0 || mod.Toolchain != "" {
		t.Errorf("go.mod has replace directives %v or toolchain %q: a tagged module must build for its users as is", mod.Replace, mod.Toolchain)
	}
	if mod.Go == "" {
		t.Error("go.mod has no go line")
	}

	cmd = exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{len .GoFiles}}\t{{.Doc}}", "./...")
	cmd.Dir = root
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, rest, _ := strings.Cut(line, "\t")
		files, doc, _ := strings.Cut(rest, "\t")
		if files == "0" { // test files only: go doc shows nothing
			continue
		}
		n++
		if doc == "" {
			t.Errorf("package %s has no package doc", path)
		}
	}
	if n < 20 {
		t.Fatalf("only %d packages listed:\n%s", n, out)
	}
}
