package docscheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A test that the documentation names is a claim that it exists: every `TestName` of README.md
// and docs/*.md (a subtest's parent `TestName/sub…`, or a family `TestName*`) is a test
// function of the module, and every KORTYX_* variable they name is read by its code, scripts
// or compose files. (CHANGELOG.md is history: it may name what was since renamed.)
func TestDocsNameWhatExists(t *testing.T) {
	root := moduleRoot(t)
	var tests []string
	var code strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		isCode := strings.HasSuffix(name, ".go") || name == "Makefile" || name == "Dockerfile" || name == "docker-compose.yml" ||
			name == ".env.example" || strings.HasSuffix(name, ".sh") || strings.HasSuffix(name, ".mjs") || filepath.Base(filepath.Dir(path)) == "scripts"
		if !isCode {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		code.Write(b)
		if strings.HasSuffix(name, "_test.go") {
			for _, m := range testFunc.FindAllSubmatch(b, -1) {
				tests = append(tests, string(m[1]))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all := code.String()
	for _, page := range pages(t, root) {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range namedTest.FindAllStringSubmatch(line, -1) {
				name, family := m[1], m[2] == "*"
				if !slices.ContainsFunc(tests, func(s string) bool { return s == name || (family && strings.HasPrefix(s, name)) }) {
					t.Errorf("%s:%d names %s, which is not a test of the module", page, i+1, m[0])
				}
			}
			for _, v := range envVar.FindAllString(line, -1) {
				if !strings.Contains(all, v) {
					t.Errorf("%s:%d names %s, which nothing in the module reads", page, i+1, v)
				}
			}
		}
	}
}

var (
	testFunc  = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	namedTest = regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)(\\*|/[^`]*)?`")
	envVar    = regexp.MustCompile(`\bKORTYX_[A-Z0-9_]*[A-Z0-9]\b`)
)
