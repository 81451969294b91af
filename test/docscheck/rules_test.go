package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBlocksAndMarkers(t *testing.T) {
	dir := t.TempDir()
	page := strings.Join([]string{
		"# A page",
		"<!-- docscheck: prelude",
		"type hidden struct{}",
		"-->",
		"```go",
		"x := 1",
		"```",
		"<!-- docscheck: body (ctx workflow.Context) error -->",
		"```go",
		"y := 2",
		"```",
		"<!-- docscheck: skip -->",
		"```go",
		"z",
		"```",
		"<!-- docscheck: skip shows an elision -->",
		"```go",
		"a{...}",
		"```",
		"<!-- docscheck: body -->",
		"```go",
		"b := 3",
		"```",
		"<!-- docscheck: decl -->",
		"```go",
		"var c int",
		"```",
		"```go",
		"// Package p is whole.",
		"package p",
		"```",
		"```json",
		"{}",
		"```",
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "p.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	bs := blocks(t, dir, "p.md")
	type want struct {
		line         int
		kind, code   string
		errSubstring string
	}
	wants := []want{
		{3, "decls", "type hidden struct{}\n", ""},
		{6, "", "x := 1\n", "p.md:6: a ```go block that is not a complete file needs a marker"},
		{10, "body", "y := 2\n", ""},
		{14, "", "z\n", "p.md:14: a skipped block says why"},
		{18, "skip", "a{...}\n", ""},
		{22, "", "b := 3\n", "p.md:22: the body marker needs a signature"},
		{26, "", "var c int\n", `p.md:26: unknown docscheck marker "decl"`},
		{29, "file", "// Package p is whole.\npackage p\n", ""},
	}
	if len(bs) != len(wants) {
		t.Fatalf("%d blocks, want %d: %+v", len(bs), len(wants), bs)
	}
	for i, w := range wants {
		b := bs[i]
		if b.line != w.line || b.code != w.code {
			t.Errorf("block %d: line %d code %q, want line %d code %q", i, b.line, b.code, w.line, w.code)
		}
		kind, err := kindOf(b)
		switch {
		case w.errSubstring == "" && err != nil:
			t.Errorf("block %d: %v", i, err)
		case w.errSubstring != "" && (err == nil || !strings.HasPrefix(err.Error(), w.errSubstring)):
			t.Errorf("block %d: error %v, want one starting %q", i, err, w.errSubstring)
		case kind != w.kind:
			t.Errorf("block %d: kind %q, want %q", i, kind, w.kind)
		}
	}
}

func TestImportsOfUsedPackageNames(t *testing.T) {
	src := "package snippets\nfunc f(tools int) {\n\t_ = hooks.Flush\n\t_ = tools\n\tjson := 1\n\t_ = json\n\t_ = contracts.StartNode\n\t_ = unknown.X\n}\n"
	got := withImports(t, block{page: "p.md", line: 1}, src)
	want := "package snippets\nimport (\n\tcontracts \"github.com/kortyx-go/kortyx/contracts\"\n\thooks \"github.com/kortyx-go/kortyx/hooks\"\n)\n" + src[len("package snippets\n"):]
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if src := "package snippets\nvar x = 1\n"; withImports(t, block{}, src) != src {
		t.Fatal("imports added to a block that uses no package")
	}
}

func TestTopLevelVarsOfABody(t *testing.T) {
	bl := block{page: "p.md", line: 1, code: "a, err := f()\nvar b, _ int\nif c := 1; c > 0 {\n\td := 2\n\t_ = d\n}\na, e := g()\n_ = 3\n"}
	got := topLevelVars(t, bl)
	if strings.Join(got, ",") != "a,err,b,e" {
		t.Fatalf("got %v", got)
	}
}
