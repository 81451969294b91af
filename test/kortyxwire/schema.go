package kortyxwire

import "fmt"

// Known are the chunk types of Kortyx's chunk schema (v0.14) and whether Check checks their
// fields: session, status, message, text-start, text-delta, text-end, tool-result, interrupt,
// structured-data, structured-data-invalidated, checkpoint, transition, done and error are
// checked; trace, tool-call-start, tool-call-result, tool-call-error and limit-reached are
// types its client handles whose fields Check does not look at.
var Known = map[string]bool{
	"session": true, "status": true, "message": true, "text-start": true, "text-delta": true, "text-end": true,
	"tool-result": true, "interrupt": true, "structured-data": true, "structured-data-invalidated": true,
	"checkpoint": true, "transition": true, "done": true, "error": true,
	"trace": false, "tool-call-start": false, "tool-call-result": false, "tool-call-error": false, "limit-reached": false,
}

// Check tests c against Kortyx's chunk schema: an error names the first field that fails (a
// type Kortyx's schema does not have is an error too). Unknown keys pass: the schema strips them.
func Check(c Chunk) error {
	t := c.Type()
	checked, ok := Known[t]
	if !ok {
		return fmt.Errorf("chunk type %q is not in Kortyx's schema", t)
	}
	if !checked {
		return nil
	}
	str := func(m map[string]any, key string, required bool) error {
		v, present := m[key]
		if !present {
			if required {
				return fmt.Errorf("%s: %s is required", t, key)
			}
			return nil
		}
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %s must be a string, got %T", t, key, v)
		}
		return nil
	}
	all := func(m map[string]any, required []string, optional ...string) error {
		for _, k := range required {
			if err := str(m, k, true); err != nil {
				return err
			}
		}
		for _, k := range optional {
			if err := str(m, k, false); err != nil {
				return err
			}
		}
		return nil
	}
	m := map[string]any(c)
	switch t {
	case "session":
		return all(m, []string{"sessionId"})
	case "status":
		return all(m, []string{"message"}, "node")
	case "message":
		return all(m, []string{"content"}, "node")
	case "text-start", "text-end":
		return all(m, nil, "node", "id", "opId", "segmentId")
	case "text-delta":
		return all(m, []string{"delta"}, "node", "id", "opId", "segmentId")
	case "tool-result":
		return all(m, nil, "tool", "node")
	case "error":
		return all(m, []string{"message"})
	case "transition":
		return all(m, []string{"transitionTo"})
	case "structured-data-invalidated":
		return all(m, []string{"streamId", "checkpointId"})
	case "checkpoint":
		if err := all(m, []string{"id", "sessionId"}, "label"); err != nil {
			return err
		}
		if _, ok := m["turnIndex"].(float64); !ok {
			return fmt.Errorf("checkpoint: turnIndex must be a number, got %T", m["turnIndex"])
		}
	case "structured-data":
		if err := all(m, []string{"streamId", "dataType"}, "schemaId", "schemaVersion", "id", "node"); err != nil {
			return err
		}
		switch m["kind"] {
		case "set", "append", "text-delta":
			if p, _ := m["path"].(string); p == "" {
				return fmt.Errorf("structured-data %v: path must be a non-empty string", m["kind"])
			}
			if m["kind"] == "append" {
				if _, ok := m["items"].([]any); !ok {
					return fmt.Errorf("structured-data append: items must be an array")
				}
			}
			if m["kind"] == "text-delta" {
				return str(m, "delta", true)
			}
		case "final":
		default:
			return fmt.Errorf("structured-data: kind %v is not set, append, text-delta or final", m["kind"])
		}
	case "interrupt":
		if err := all(m, []string{"requestId", "resumeToken"}, "workflow", "node", "id", "opId", "schemaId", "schemaVersion"); err != nil {
			return err
		}
		if err := record(m, "meta"); err != nil {
			return fmt.Errorf("interrupt: %w", err)
		}
		in, ok := m["input"].(map[string]any)
		if !ok {
			return fmt.Errorf("interrupt: input must be an object")
		}
		if _, ok := in["multiple"].(bool); !ok {
			return fmt.Errorf("interrupt: input.multiple must be a boolean")
		}
		if err := all(in, nil, "id", "schemaId", "schemaVersion"); err != nil {
			return err
		}
		if err := record(in, "meta"); err != nil {
			return fmt.Errorf("interrupt input: %w", err)
		}
		switch in["kind"] {
		case "text":
			if err := str(in, "question", false); err != nil {
				return err
			}
			if o, present := in["options"]; present {
				if list, ok := o.([]any); !ok || len(list) > 0 {
					return fmt.Errorf("interrupt text: options must be absent or an empty array, got %v", o)
				}
			}
		case "choice", "multi-choice":
			if err := str(in, "question", true); err != nil {
				return err
			}
			list, ok := in["options"].([]any)
			if !ok {
				return fmt.Errorf("interrupt %v: options must be an array", in["kind"])
			}
			for i, o := range list {
				om, ok := o.(map[string]any)
				if !ok {
					return fmt.Errorf("interrupt: options[%d] must be an object", i)
				}
				if err := all(om, []string{"id", "label"}, "description"); err != nil {
					return fmt.Errorf("options[%d]: %w", i, err)
				}
			}
		default:
			return fmt.Errorf("interrupt: input.kind %v is not text, choice or multi-choice", in["kind"])
		}
	}
	return nil
}

// record checks an optional record (a JSON object) field.
func record(m map[string]any, key string) error {
	v, present := m[key]
	if !present {
		return nil
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("%s must be an object, got %T", key, v)
	}
	return nil
}
