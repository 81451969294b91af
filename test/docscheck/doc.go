// Package docscheck builds every Go snippet of README.md and docs/*.md (its test does; the
// package has no code of its own), so that the documentation shows code that compiles against
// today's API.
//
// A ```go block is one of:
//
//   - a complete file: its first line that is not a comment starts with "package"; it is built
//     as a package of its own, with its own imports;
//   - marked by an HTML comment on the line just above the fence (invisible on the rendered
//     page), one of
//     <!-- docscheck: decls --> top-level declarations,
//     <!-- docscheck: body SIGNATURE --> statements, built as the body of "func _SIGNATURE",
//     e.g. <!-- docscheck: body (ctx workflow.Context) (workflows.NodeResult, error) -->,
//     <!-- docscheck: skip REASON --> not built (a shape with elisions such as "…"), with the
//     reason said.
//
// A page may also declare what its snippets assume (a type, a variable) in a hidden block: an
// HTML comment whose first line is "<!-- docscheck: prelude" and whose last line is "-->",
// with declarations between them.
//
// The decls and body blocks of one page form one package, so a block may use what an earlier
// block of the page declares; each gets the imports of the package names it uses (contracts,
// hooks, workflows, workflow, client, json, …: the table in the test), and a body's top-level
// variables are used, so a snippet need not use all it declares. An unmarked block that is not
// a complete file fails the check, and so does any compile error, reported at the page's line.
package docscheck
