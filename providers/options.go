package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
)

// warningSettingUsage is the Setting of [NoUsageWarning].
const warningSettingUsage = "usage"

// NoUsageWarning is the warning a provider returns for a pass whose answer reported no token
// usage (a server or stream that sends none): the usage is then zero, and never silently so.
func NoUsageWarning(providerID string) Warning {
	return Warning{Type: WarningOther, Setting: warningSettingUsage,
		Message: fmt.Sprintf("The %s provider's server reported no token usage for this pass; its usage is counted as 0.", providerID)}
}

// DecodeOptions reads a provider's own options from [CallOptions.ProviderOptions].
//
// The convention every provider follows: ProviderOptions is keyed by provider id, and each
// provider reads only the object under its own id into a typed struct T of its package (e.g.
// openai.ProviderOptions), whose fields name the keys by their json tags:
//
//	ProviderOptions: map[string]any{
//		"openai":    map[string]any{"seed": 7},
//		"anthropic": map[string]any{"topK": 40},
//	}
//
// Keys under other ids belong to other providers and are not read (a call may name options for
// several providers, so that switching its model keeps them). A key of T's object that T does
// not declare (matched exactly, case included) is reported as an unsupported warning with the
// Setting "providerOptions.<id>.<key>", never dropped silently; the warnings are sorted by key.
// No entry for providerID (or a null one) gives T's zero value. A value that is not an object,
// or a key whose value does not fit its field (a string for a number, …), is a
// PROVIDER_CONFIGURATION error naming the setting to fix (not retryable).
func DecodeOptions[T any](opts map[string]any, providerID string) (T, []Warning, error) {
	var out T
	v, ok := opts[providerID]
	if !ok || v == nil {
		return out, nil, nil
	}
	prefix := "providerOptions." + providerID
	raw, err := json.Marshal(v)
	if err != nil {
		return out, nil, &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: err,
			Message: fmt.Sprintf("%s cannot be encoded as JSON: set it to an object of plain values.", prefix)}
	}
	var fields map[string]json.RawMessage
	if bytes.TrimSpace(raw)[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return out, nil, contracts.Errorf(contracts.CodeProviderConfiguration,
			"%s must be an object of the %s provider's options (got %s).", prefix, providerID, jsonKind(raw))
	}
	known := jsonFieldNames(reflect.TypeFor[T]())
	var warnings []Warning
	kept := map[string]json.RawMessage{}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !known[k] {
			msg := fmt.Sprintf("The %s provider has no options; '%s' was ignored.", providerID, k)
			if len(known) > 0 {
				msg = fmt.Sprintf("The %s provider has no option '%s' (known: %s); it was ignored.",
					providerID, k, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
			}
			warnings = append(warnings, Warning{Type: WarningUnsupported, Setting: prefix + "." + k, Message: msg})
			continue
		}
		kept[k] = fields[k]
	}
	b, _ := json.Marshal(kept) // re-encoding decoded raw messages cannot fail
	if err := json.Unmarshal(b, &out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			what := prefix + "." + te.Field
			if known[te.Field] && fieldKind(reflect.TypeFor[T](), te.Field) == reflect.Map {
				what = "the values of " + what
			}
			return out, nil, &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: err,
				Message: fmt.Sprintf("%s must be %s (got %s).", what, kindOf(te.Type), te.Value)}
		}
		return out, nil, &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: err,
			Message: fmt.Sprintf("%s could not be read: %v", prefix, err)}
	}
	return out, warnings, nil
}

// jsonFieldNames are the object keys encoding/json maps onto the fields of struct type t.
func jsonFieldNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return names
	}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names[name] = true
	}
	return names
}

// fieldKind is the kind of the field of struct type t that encoding/json fills from key name.
func fieldKind(t reflect.Type, name string) reflect.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, f := range reflect.VisibleFields(t) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name || (tag == "" && f.Name == name) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			return ft.Kind()
		}
	}
	return reflect.Invalid
}

func jsonKind(raw []byte) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '[':
		return "an array"
	case t[0] == '"':
		return "a string"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

func kindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return t.String()
}
