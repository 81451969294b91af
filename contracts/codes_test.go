package contracts

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryCodeConstantIsDeclared reads the package's sources: every constant of type Code must
// be in the declared set, or CodeOf would not recognize it after a Temporal boundary.
func TestEveryCodeConstantIsDeclared(t *testing.T) {
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	found := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					require.True(t, ok, "%s: %s is not a string literal", name, n.Name)
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					found++
					require.True(t, Code(v).Declared(), "%s: add %s (%q) to the declared codes in errors.go", name, n.Name, v)
				}
			}
		}
	}
	require.Equal(t, len(declared), found, "the declared set lists exactly the Code constants")
}
