package execution

import (
	"go.temporal.io/sdk/workflow"
)

// DeepMerge merges src into dst (spec F1.3 deepMergeWithArrayOverwrite): plain objects merge
// recursively, arrays and scalars from src replace. It returns a new map and never mutates its
// arguments; nested maps of dst that are not touched are shared, so callers treat results as
// immutable.
func DeepMerge(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	for _, k := range workflow.DeterministicKeys(dst) {
		out[k] = dst[k]
	}
	for _, k := range workflow.DeterministicKeys(src) {
		sv := src[k]
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = DeepMerge(dm, sm)
				continue
			}
			out[k] = DeepMerge(nil, sm)
			continue
		}
		out[k] = sv
	}
	return out
}

// ToRecord returns v as an object (spec F1.3): an object stays; nil becomes {}; any other value
// becomes {"rawInput": v}.
func ToRecord(v any) map[string]any {
	switch t := v.(type) {
	case map[string]any:
		return t
	case nil:
		return map[string]any{}
	default:
		return map[string]any{"rawInput": v}
	}
}
