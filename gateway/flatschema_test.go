package gateway

import (
	"encoding/json"
	"testing"
)

// flatSchemas are inputSchemas newFlatSchema takes, and ones it must
// leave to jsonschema-go.
var flatSchemas = map[string]bool{
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`:                                       true,
	`{"type":"object","properties":{"n":{"type":"integer","description":"a count"},"x":{"type":"number"},"b":{"type":"boolean"},"z":{"type":"null"}}}`: true,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"s":{"type":"string"}},"additionalProperties":true}`:           true,
	`{"type":"object","properties":{"s":{"type":"string","minLength":3}}}`:                                                                             false,
	`{"type":"object","properties":{"s":{"type":"string","enum":["a"]}}}`:                                                                              false,
	`{"type":"object","properties":{"o":{"type":"object"}}}`:                                                                                           false,
	`{"type":"object","properties":{"s":{"type":["string","null"]}}}`:                                                                                  false,
	`{"type":"object","properties":{"s":{"type":"string"}},"minProperties":1}`:                                                                         false,
	`{"type":"object","additionalProperties":{"type":"string"}}`:                                                                                       false,
	`{"properties":{"s":{"type":"string"}}}`:                                                                                                           false,
}

// flatArguments are arguments each schema above is tried with: the
// fast path may accept only what jsonschema-go accepts.
var flatArguments = []string{
	``, `null`, `{}`, `{"text":"hi"}`, `{"text":1}`, `{"text":"hi","more":1}`, `{"more":1}`,
	`{"n":3,"x":1.5,"b":true,"z":null}`, `{"n":1.5}`, `{"n":1e400}`, `{"x":-0.0}`, `{"n":10.0}`,
	`{"s":"abc"}`, `{"s":"ab"}`, `{"s":null}`, `{"s":"a","other":[1]}`, `{"s":"a","other":1e400}`,
	`{"\u00e9":"x"}`, "{\"s\":\"a\",\"\xc3\xa9\":1}", `{"t\u0065xt":"hi"}`, `[]`, `"text"`, ` { "text" : "hi" } `,
}

// TestFlatSchema proves the fast acceptance is taken for the schemas it
// is for, and never accepts arguments jsonschema-go refuses.
func TestFlatSchema(t *testing.T) {
	for schema, flat := range flatSchemas {
		ts := checkSchema(json.RawMessage(schema))
		if ts.refusal != "" {
			t.Fatalf("%s: %s", schema, ts.refusal)
		}
		if (ts.flat != nil) != flat {
			t.Errorf("%s: flat %v, want %v", schema, ts.flat != nil, flat)
		}
		for _, args := range flatArguments {
			agreeFlat(t, ts, schema, args)
		}
	}
	ts := checkSchema(json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`))
	if !ts.flat.accepts([]byte(`{"text":"hi"}`)) {
		t.Error("the fast path refuses matching arguments: it would never be taken")
	}
}

// agreeFlat fails when ts's fast path accepts args that jsonschema-go
// refuses.
func agreeFlat(t testing.TB, ts toolSchema, schema, args string) {
	if ts.flat == nil || !ts.flat.accepts([]byte(args)) {
		return
	}
	var v any = map[string]any{}
	if args != "" && args != "null" {
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			t.Fatalf("%s: fast path accepts %s, which is not JSON to jsonschema-go: %v", schema, args, err)
		}
	}
	if err := ts.res.Validate(v); err != nil {
		t.Fatalf("%s: fast path accepts %s, which jsonschema-go refuses: %v", schema, args, err)
	}
}

func FuzzFlatSchema(f *testing.F) {
	for _, a := range flatArguments {
		f.Add(a)
	}
	var schemas []toolSchema
	var names []string
	for s, flat := range flatSchemas {
		if flat {
			schemas, names = append(schemas, checkSchema(json.RawMessage(s))), append(names, s)
		}
	}
	f.Fuzz(func(t *testing.T, args string) {
		if args != "" && !json.Valid([]byte(args)) {
			return
		}
		if _, dup := ambiguousMember([]byte(args)); dup {
			return // validate refuses these first
		}
		for i, ts := range schemas {
			agreeFlat(t, ts, names[i], args)
		}
	})
}
