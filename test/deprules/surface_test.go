package deprules_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The public surface: every exported identifier of a public package is there for a user, and
// there are few of them. Counted: exported top-level types, functions, constants and variables,
// and exported methods of exported types, in the non-test files of every package a user can
// import (not internal/, test/, examples/, bench/ or a main package). Struct fields and
// interface methods are not counted. Enum constants — exported constants declared with an
// exported type of their own package (`ChunkTrace ChunkType = "trace"`) — are counted apart and
// are not held to the limits: an enum type ships with its constants.
const (
	surfaceLimit   = 600 // all public packages
	contractsLimit = 150 // the contracts package
)

// `go test ./test/deprules -run TestPublicSurface -v` prints the count of every package.
func TestPublicSurface(t *testing.T) {
	counts, enumCounts := map[string]int{}, map[string]int{}
	total, enumTotal := 0, 0
	for _, pkg := range goList(t, "-f", `{{if ne .Name "main"}}{{.ImportPath}}={{.Dir}}{{end}}`, module+"/...") {
		path, dir, _ := strings.Cut(pkg, "=")
		rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		if rel == "" {
			rel = "."
		}
		if !isPublic(rel) {
			continue
		}
		n, enums, err := countExported(dir)
		if err != nil {
			t.Fatal(err)
		}
		counts[rel], total = n, total+n
		enumCounts[rel], enumTotal = enums, enumTotal+enums
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%5d  %s (+%d enum constants)\n", counts[k], k, enumCounts[k])
	}
	fmt.Fprintf(&b, "%5d  exported identifiers in %d public packages, and %d enum constants\n", total, len(counts), enumTotal)
	t.Log("\n" + b.String())
	if total > surfaceLimit {
		t.Errorf("the public packages export %d identifiers besides enum constants; the limit is %d: unexport or move to internal/ what no user needs", total, surfaceLimit)
	}
	if counts["contracts"] > contractsLimit {
		t.Errorf("contracts exports %d identifiers besides enum constants; the limit is %d", counts["contracts"], contractsLimit)
	}
}

func isPublic(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if part == "internal" {
			return false
		}
	}
	first, _, _ := strings.Cut(rel, "/")
	return first != "test" && first != "examples" && first != "bench"
}

// countExported counts the exported identifiers of the package in dir (see TestPublicSurface):
// n besides enum constants, and enums.
func countExported(dir string) (n, enums int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, 0, err
	}
	var parsed []*ast.File
	types := map[string]bool{} // the package's exported types
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			return 0, 0, err
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution)
		if err != nil {
			return 0, 0, err
		}
		parsed = append(parsed, f)
		for _, decl := range f.Decls {
			if d, ok := decl.(*ast.GenDecl); ok && d.Tok == token.TYPE {
				for _, spec := range d.Specs {
					if s := spec.(*ast.TypeSpec); s.Name.IsExported() {
						types[s.Name.Name] = true
					}
				}
			}
		}
	}
	for _, f := range parsed {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || receiverExported(d.Recv.List[0].Type)) {
					n++
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							n++
						}
					case *ast.ValueSpec:
						typ, _ := s.Type.(*ast.Ident)
						enum := d.Tok == token.CONST && typ != nil && types[typ.Name]
						for _, name := range s.Names {
							switch {
							case !name.IsExported():
							case enum:
								enums++
							default:
								n++
							}
						}
					}
				}
			}
		}
	}
	return n, enums, nil
}

func receiverExported(t ast.Expr) bool {
	for {
		switch e := t.(type) {
		case *ast.StarExpr:
			t = e.X
		case *ast.IndexExpr:
			t = e.X
		case *ast.IndexListExpr:
			t = e.X
		case *ast.Ident:
			return e.IsExported()
		default:
			return false
		}
	}
}
