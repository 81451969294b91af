// Package contracts holds what every side of a Kortyx run agrees on, and nothing that has side
// effects, so it is safe in workflow code: error codes and the failure descriptor ([CodeOf],
// [FailureOf], [ToTemporal]), JSON Schema compilation and validation ([CompileSchema]), the
// stream chunk types of the wire protocol ([Chunk]), interrupt requests and answers
// ([Response], [NormalizeAnswer]), run payloads ([RunInput], [RunView]) and the wire names of
// workflows, signals, updates, queries, activities and search attributes.
//
// Classify any error, from any layer, with CodeOf:
//
//	_, err := run.Get(ctx, &result)
//	switch contracts.CodeOf(err) {
//	case "":
//		// completed
//	case contracts.CodeExecutionCancelled:
//		// a human or an operator cancelled the run
//	case contracts.CodeInvalidInput:
//		f := contracts.FailureOf(err) // f.Issues says which fields are wrong
//		_ = f
//	}
//
// Compile schemas once, outside workflow code, and validate anywhere:
//
//	var ticket = contracts.MustCompileSchema(`{"type":"object","required":["title"]}`)
//	issues := ticket.Validate(map[string]any{"title": 1}) // [title: got number, want string]
package contracts
