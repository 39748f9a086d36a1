package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// decodeStrict decodes one JSON document into v (a pointer to a struct),
// rejecting keys that v does not declare. Every error names the key path of
// the offending value, e.g. "schemes[0].validation.tokns: unknown key".
func decodeStrict(data []byte, v any) error {
	if !json.Valid(data) {
		var probe any
		err := json.Unmarshal(data, &probe)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return fmt.Errorf("not valid JSON: %v (line %d)", se, line)
		}
		return fmt.Errorf("not valid JSON: %v", err)
	}
	return decodeValue("", bytes.TrimSpace(data), reflect.ValueOf(v).Elem())
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func decodeValue(path string, raw json.RawMessage, rv reflect.Value) error {
	if rv.CanAddr() && rv.Addr().Type().Implements(unmarshalerType) {
		if err := json.Unmarshal(raw, rv.Addr().Interface()); err != nil {
			return fmt.Errorf("%s: %w", describe(path), unwrapJSON(err))
		}
		return nil
	}
	switch rv.Kind() {
	case reflect.Struct:
		obj, err := decodeObject(path, raw)
		if err != nil {
			return err
		}
		fields := jsonFields(rv.Type())
		for _, key := range sortedKeys(obj) {
			i, ok := fields[key]
			if !ok {
				return fmt.Errorf("%s: unknown key", join(path, key))
			}
			if err := decodeValue(join(path, key), obj[key], rv.Field(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		obj, err := decodeObject(path, raw)
		if err != nil {
			return err
		}
		m := reflect.MakeMapWithSize(rv.Type(), len(obj))
		for _, key := range sortedKeys(obj) {
			elem := reflect.New(rv.Type().Elem()).Elem()
			if err := decodeValue(join(path, key), obj[key], elem); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(key), elem)
		}
		rv.Set(m)
		return nil
	case reflect.Slice:
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return fmt.Errorf("%s: must be an array", describe(path))
		}
		s := reflect.MakeSlice(rv.Type(), len(arr), len(arr))
		for i, item := range arr {
			if err := decodeValue(fmt.Sprintf("%s[%d]", path, i), item, s.Index(i)); err != nil {
				return err
			}
		}
		rv.Set(s)
		return nil
	case reflect.Pointer:
		if string(raw) == "null" {
			return nil
		}
		p := reflect.New(rv.Type().Elem())
		if err := decodeValue(path, raw, p.Elem()); err != nil {
			return err
		}
		rv.Set(p)
		return nil
	default:
		if err := json.Unmarshal(raw, rv.Addr().Interface()); err != nil {
			return fmt.Errorf("%s: must be a %s", describe(path), kindName(rv.Kind()))
		}
		return nil
	}
}

func decodeObject(path string, raw json.RawMessage) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s: must be an object", describe(path))
	}
	return obj, nil
}

// jsonFields maps each exported field's JSON key to its index.
func jsonFields(t reflect.Type) map[string]int {
	out := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = i
	}
	return out
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describe(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean (true or false)"
	default:
		return "number"
	}
}

// unwrapJSON strips encoding/json's "json: " decoration from errors returned
// by our own UnmarshalJSON methods.
func unwrapJSON(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("must be a %s", te.Type.Kind())
	}
	return err
}
