package gateway

import (
	"math"
	"reflect"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentauth/agentauth/wire"
)

// A fast acceptance for the commonest inputSchema: an object whose
// properties each name one scalar type (JSON Schema 2020-12 §6.1.1
// "type", §10.3.2.1 "properties", §10.3.2.3 "additionalProperties",
// §6.5.3 "required"), and nothing else. validate asks flatSchema first,
// on the raw arguments, and gives them to jsonschema-go (which decodes
// them into maps and values first) only when flatSchema cannot say
// they match: flatSchema never refuses, so a refusal, and its message,
// is always jsonschema-go's. It is hand-written because jsonschema-go
// validates decoded values only; accepting without decoding is what
// saves the allocations.

// flatSchema is a schema flatAccepts can decide; nil for any other.
type flatSchema struct {
	types    map[string]string // property name → its one JSON type
	required []string
	closed   bool // additionalProperties: false
}

// scalarTypes are the property types flatAccepts tells from a value's
// first byte (and, for numbers, its literal).
var scalarTypes = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "null": true}

// newFlatSchema returns s as a flatSchema, or nil when s uses anything
// more than the keywords above (annotations aside).
func newFlatSchema(s *jsonschema.Schema) *flatSchema {
	if s == nil || s.Type != "object" || len(s.Properties) > 64 {
		return nil
	}
	root := *s
	root.Schema, root.Title, root.Description, root.Comment, root.PropertyOrder = "", "", "", "", nil
	root.Type, root.Properties, root.Required = "", nil, nil
	f := &flatSchema{types: make(map[string]string, len(s.Properties)), required: s.Required}
	switch ap := s.AdditionalProperties; {
	case ap == nil || reflect.DeepEqual(*ap, jsonschema.Schema{}):
	case reflect.DeepEqual(*ap, jsonschema.Schema{Not: &jsonschema.Schema{}}):
		f.closed = true
	default:
		return nil
	}
	root.AdditionalProperties = nil
	if !reflect.DeepEqual(root, jsonschema.Schema{}) {
		return nil
	}
	for name, p := range s.Properties {
		if p == nil || !scalarTypes[p.Type] {
			return nil
		}
		q := *p
		q.Title, q.Description, q.Comment, q.Type = "", "", "", ""
		if !reflect.DeepEqual(q, jsonschema.Schema{}) {
			return nil
		}
		f.types[name] = p.Type
	}
	return f
}

// accepts reports whether the arguments args (valid JSON, members named
// at most once: validate checks both first) certainly match the schema;
// false means only that jsonschema-go must decide.
func (f *flatSchema) accepts(args []byte) bool {
	if len(args) == 0 || string(args) == "null" {
		return len(f.required) == 0
	}
	i := skipWS(args, 0)
	if i >= len(args) || args[i] != '{' {
		return false
	}
	ok, found := true, 0
	wire.Members(args, func(name, v []byte) {
		if !ok {
			return
		}
		for _, c := range name {
			if c >= 0x80 { // decoding may replace bytes: let jsonschema-go see it
				ok = false
				return
			}
		}
		t, known := f.types[string(name)]
		switch {
		case !known:
			ok = !f.closed && anyScalar(v)
		case scalarMatches(t, v):
			for _, r := range f.required {
				if r == string(name) {
					found++
					break
				}
			}
		default:
			ok = false
		}
	})
	return ok && found == len(f.required)
}

// scalarMatches reports whether the JSON value v is certainly of type t
// as jsonschema-go decides it (a number is an integer when its float64
// has no fraction).
func scalarMatches(t string, v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch c := v[0]; {
	case c == '"':
		return t == "string"
	case c == 't' || c == 'f':
		return t == "boolean"
	case c == 'n':
		return t == "null"
	case c == '-' || c >= '0' && c <= '9':
		if t != "number" && t != "integer" {
			return false
		}
		// A literal json.Unmarshal cannot hold in a float64 is its
		// refusal ("not JSON"), not an acceptance.
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return false
		}
		_, frac := math.Modf(x)
		return t == "number" || frac == 0
	}
	return false
}

// anyScalar reports whether v is a string, boolean, null or a number
// json.Unmarshal holds in a float64: a member no schema checks, which
// jsonschema-go would accept once decoded.
func anyScalar(v []byte) bool {
	return scalarMatches("string", v) || scalarMatches("boolean", v) || scalarMatches("null", v) || scalarMatches("number", v)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
