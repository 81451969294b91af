package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// imports are the package names a decls or body snippet may use without importing them.
var imports = map[string]string{
	"context":    "context",
	"errors":     "errors",
	"fmt":        "fmt",
	"http":       "net/http",
	"io":         "io",
	"json":       "encoding/json",
	"log":        "log",
	"os":         "os",
	"slog":       "log/slog",
	"strings":    "strings",
	"sync":       "sync",
	"testing":    "testing",
	"time":       "time",
	"embed":      "embed",
	"kortyx":     "github.com/kortyx-go/kortyx",
	"activities": "github.com/kortyx-go/kortyx/activities",
	"app":        "github.com/kortyx-go/kortyx/app",
	"chat":       "github.com/kortyx-go/kortyx/chat",
	"sessions":   "github.com/kortyx-go/kortyx/sessions",
	"sse":        "github.com/kortyx-go/kortyx/stream/sse",
	"sseclient":  "github.com/kortyx-go/kortyx/stream/sseclient",
	"contracts":  "github.com/kortyx-go/kortyx/contracts",
	"devserver":  "github.com/kortyx-go/kortyx/devserver",
	"examples":   "github.com/kortyx-go/kortyx/examples",
	"hello":      "github.com/kortyx-go/kortyx/examples/hello",
	"research":   "github.com/kortyx-go/kortyx/examples/research",
	"support":    "github.com/kortyx-go/kortyx/examples/support",
	"triage":     "github.com/kortyx-go/kortyx/examples/triage",
	"hooks":      "github.com/kortyx-go/kortyx/hooks",
	"kortyxtest": "github.com/kortyx-go/kortyx/kortyxtest",
	"providers":  "github.com/kortyx-go/kortyx/providers",
	"fake":       "github.com/kortyx-go/kortyx/providers/fake",
	"openai":     "github.com/kortyx-go/kortyx/providers/openai",
	"stream":     "github.com/kortyx-go/kortyx/stream",
	"telemetry":  "github.com/kortyx-go/kortyx/telemetry",
	"tools":      "github.com/kortyx-go/kortyx/tools",
	"mcp":        "github.com/kortyx-go/kortyx/tools/mcp",
	"web":        "github.com/kortyx-go/kortyx/web",
	"workflows":  "github.com/kortyx-go/kortyx/workflows",
	"require":    "github.com/stretchr/testify/require",
	"client":     "go.temporal.io/sdk/client",
	"temporal":   "go.temporal.io/sdk/temporal",
	"worker":     "go.temporal.io/sdk/worker",
	"workflow":   "go.temporal.io/sdk/workflow",
}

// block is one ```go block of a page.
type block struct {
	page   string // path relative to the module root
	line   int    // line of the first line of code
	marker string // "", "decls", "body", "skip"
	arg    string // the body's signature, the skip's reason
	code   string
}

var markerRE = regexp.MustCompile(`^<!--\s*docscheck:\s*(\w+)\s*(.*?)\s*-->$`)

// blocks extracts the ```go blocks of a page.
func blocks(t *testing.T, root, page string) []block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "<!-- docscheck: prelude") {
			bl := block{page: page, line: i + 2, marker: "decls"}
			j := i + 1
			for j < len(lines) && strings.TrimSpace(lines[j]) != "-->" {
				j++
			}
			bl.code = strings.Join(lines[i+1:min(j, len(lines))], "\n") + "\n"
			out = append(out, bl)
			i = j
			continue
		}
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		bl := block{page: page, line: i + 2}
		if i > 0 {
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				bl.marker, bl.arg = m[1], m[2]
			}
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) != "```" {
			j++
		}
		if j == len(lines) {
			t.Errorf("%s:%d: the ```go block is not closed", page, i+1)
		}
		bl.code = strings.Join(lines[i+1:min(j, len(lines))], "\n") + "\n"
		out = append(out, bl)
		i = j
	}
	return out
}

// isFile reports whether the block is a complete file: its first line that is not blank or a
// comment starts with "package".
func isFile(code string) bool {
	for _, l := range strings.Split(code, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		return strings.HasPrefix(l, "package ")
	}
	return false
}

// withImports prepends the imports of the package names src uses (names it declares itself
// are not packages).
func withImports(t *testing.T, bl block, src string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%s:%d: %v", bl.page, bl.line, err)
		return src
	}
	declared := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						declared[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				declared[id.Name] = true
			}
		case *ast.Field:
			for _, id := range n.Names {
				declared[id.Name] = true
			}
		case *ast.FuncDecl:
			declared[n.Name.Name] = true
		case *ast.TypeSpec:
			declared[n.Name.Name] = true
		}
		return true
	})
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] != "" && !declared[id.Name] {
				used[id.Name] = true
			}
		}
		return true
	})
	embeds := strings.Contains(src, "\n//go:embed ")
	if len(used) == 0 && !embeds {
		return src
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("import (\n")
	if embeds {
		b.WriteString("\t_ \"embed\"\n")
	}
	for _, n := range names {
		fmt.Fprintf(&b, "\t%s %q\n", n, imports[n])
	}
	b.WriteString(")\n")
	i := strings.Index(src, "\n") + 1 // after the package clause
	return src[:i] + b.String() + src[i:]
}

// topLevelVars are the variables a body's top-level statements declare.
func topLevelVars(t *testing.T, bl block) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+bl.code+"\n}\n", parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%s:%d: the body does not parse: %v", bl.page, bl.line, err)
		return nil
	}
	var vars []string
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, l := range st.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name != "_" && !slices.Contains(vars, id.Name) {
						vars = append(vars, id.Name)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, s := range g.Specs {
					for _, id := range s.(*ast.ValueSpec).Names {
						if id.Name != "_" {
							vars = append(vars, id.Name)
						}
					}
				}
			}
		}
	}
	return vars
}

// kindOf is how a block is built: "file", "decls", "body" or "skip"; an error says what the
// block lacks.
func kindOf(bl block) (string, error) {
	switch bl.marker {
	case "":
		if isFile(bl.code) {
			return "file", nil
		}
		return "", fmt.Errorf("%s:%d: a ```go block that is not a complete file needs a marker on the line above: <!-- docscheck: decls -->, <!-- docscheck: body (params) results --> or <!-- docscheck: skip REASON --> (see test/docscheck)", bl.page, bl.line)
	case "decls":
		return "decls", nil
	case "body":
		if !strings.HasPrefix(bl.arg, "(") {
			return "", fmt.Errorf("%s:%d: the body marker needs a signature, e.g. <!-- docscheck: body (ctx workflow.Context) error -->", bl.page, bl.line)
		}
		return "body", nil
	case "skip":
		if bl.arg == "" {
			return "", fmt.Errorf("%s:%d: a skipped block says why: <!-- docscheck: skip REASON -->", bl.page, bl.line)
		}
		return "skip", nil
	}
	return "", fmt.Errorf("%s:%d: unknown docscheck marker %q", bl.page, bl.line, bl.marker)
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// pages are README.md and docs/*.md.
func pages(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.Join("docs", filepath.Base(d)))
	}
	return out
}

func TestDocSnippetsCompile(t *testing.T) {
	root := moduleRoot(t)
	// Inside the module (so its packages resolve), in a directory the go tool's ./... skips.
	build, err := os.MkdirTemp(filepath.Join(root, "test", "docscheck"), "_build")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(build) })
	var dirs []string
	counts := map[string]int{}
	for _, page := range pages(t, root) {
		pkg := strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(page)
		for _, bl := range blocks(t, root, page) {
			kind, err := kindOf(bl)
			if err != nil {
				t.Error(err)
				continue
			}
			counts[kind]++
			var dir, src string
			switch kind {
			case "file":
				dir = filepath.Join(build, fmt.Sprintf("%s_%d", pkg, bl.line))
				src = fmt.Sprintf("//line %s:%d\n%s", bl.page, bl.line, bl.code)
			case "decls":
				dir = filepath.Join(build, pkg)
				src = withImports(t, bl, fmt.Sprintf("package snippets\n//line %s:%d\n%s", bl.page, bl.line, bl.code))
			case "body":
				var uses strings.Builder
				for _, v := range topLevelVars(t, bl) {
					fmt.Fprintf(&uses, "\t_ = %s\n", v)
				}
				dir = filepath.Join(build, pkg)
				src = withImports(t, bl, fmt.Sprintf("package snippets\nfunc _%s {\n//line %s:%d\n%s\n%s\tpanic(0)\n}\n",
					bl.arg, bl.page, bl.line, bl.code, uses.String()))
			case "skip":
				continue
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("snippet_%d.go", bl.line)), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(bl.code, "\n") {
				if name, ok := strings.CutPrefix(l, "//go:embed "); ok { // an empty file to embed
					if err := os.WriteFile(filepath.Join(dir, strings.TrimSpace(name)), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
	}
	t.Logf("snippets: %d complete files, %d declaration blocks, %d bodies, %d skipped", counts["file"], counts["decls"], counts["body"], counts["skip"])
	if len(dirs) == 0 {
		t.Fatal("no snippet to build: the pages were not found")
	}
	args := []string{"build"}
	for _, d := range dirs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "./"+filepath.ToSlash(rel))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the snippets do not compile (positions are the pages' lines):\n%s", out)
	}
}
