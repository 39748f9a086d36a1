package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// TestReadToolsCall: the tool's name and raw arguments are read from
// tools/call params; a member the gateway reads that is spelled in
// another case or appears twice is refused (a backend could take
// another tool than the one checked), as are members of the wrong type.
func TestReadToolsCall(t *testing.T) {
	for _, tc := range []struct {
		params, name, args, problem string
	}{
		{`{"name":"echo","arguments":{"text":"hi"}}`, "echo", `{"text":"hi"}`, ""},
		{`{ "arguments" : [1, {"a":"}"}] , "name" : "e\u0063ho" }`, "echo", `[1, {"a":"}"}]`, ""},
		{`{"name":"echo","_meta":{"progressToken":1},"other":{"name":"x","NAME":"y"}}`, "echo", "", ""},
		{`{"n\u0061me":"echo"}`, "echo", "", ""},
		{`{"name":"echo","NAME":"admin"}`, "", "", `member "NAME" is not "name": member names are case-sensitive`},
		{`{"Arguments":{},"name":"echo"}`, "", "", `member "Arguments" is not "arguments": member names are case-sensitive`},
		{`{"name":"admin","name":"echo"}`, "", "", `member "name" appears twice`},
		{`{"name":"echo","arguments":{},"arguments":{"x":1}}`, "", "", `member "arguments" appears twice`},
		{`{"name":5}`, "", "", `"name" is not a string`},
		{`{"name":"echo","inputResponses":[]}`, "", "", `"inputResponses" is not an object`},
		{`{"name":"echo","_meta":"x"}`, "", "", `"_meta" is not an object`},
		{`{"arguments":{}}`, "", "", `tools/call needs {"name": "…", "arguments": {…}}`},
		{`["echo"]`, "", "", `tools/call needs {"name": "…", "arguments": {…}}`},
		{`null`, "", "", `tools/call needs {"name": "…", "arguments": {…}}`},
	} {
		p, problem := readToolsCall([]byte(tc.params))
		if problem != tc.problem {
			t.Errorf("%s: problem %q, want %q", tc.params, problem, tc.problem)
			continue
		}
		if problem == "" && (p.Name != tc.name || string(p.Arguments) != tc.args) {
			t.Errorf("%s: name %q arguments %s, want %q %s", tc.params, p.Name, p.Arguments, tc.name, tc.args)
		}
	}
}

// FuzzReadToolsCall: whatever readToolsCall accepts, encoding/json (which
// many backends use) reads the same name and arguments from; what
// encoding/json refuses, readToolsCall refuses.
func FuzzReadToolsCall(f *testing.F) {
	for _, s := range []string{`{"name":"echo","arguments":{"text":"hi"}}`, `{"name":"a","NAME":"b"}`,
		`{"naMe":"x","arguments":null,"inputResponses":{"signin":{"action":"accept"}}}`, `{"name":"\u00e9","_meta":{}}`, `[]`, `{"argumentſ":1,"name":"x"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		if !json.Valid([]byte(params)) {
			return
		}
		p, problem := readToolsCall([]byte(params))
		var want struct {
			Name           string                     `json:"name"`
			Arguments      json.RawMessage            `json:"arguments"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
			Meta           map[string]json.RawMessage `json:"_meta"`
		}
		err := json.Unmarshal([]byte(params), &want)
		switch {
		case problem != "":
		case err != nil:
			t.Fatalf("%s: accepted, but encoding/json: %v", params, err)
		case p.Name != want.Name || !bytes.Equal(p.Arguments, want.Arguments) && !(p.Arguments == nil && string(want.Arguments) == "null"):
			t.Fatalf("%s: name %q arguments %s; encoding/json: %q %s", params, p.Name, p.Arguments, want.Name, want.Arguments)
		case len(p.InputResponses) != len(want.InputResponses):
			t.Fatalf("%s: %d input responses; encoding/json: %d", params, len(p.InputResponses), len(want.InputResponses))
		}
	})
}

// FuzzReadHead: readHead reads a backend's message as json.Unmarshal
// into {id, method, error} does, and without withError as into {id,
// method}.
func FuzzReadHead(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, `{"ID":"a","Method":"x"}`,
		`{"id":1,"error":{"code":-32602,"message":"bad"}}`, `{"id":1,"error":null,"error":{"code":1}}`, `null`, `[1]`,
		`{"method":5}`, `{"error":"x"}`, ` {"id" : 2 , "id":[3]} `, `{"\u0069d":7}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var idMethod struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		err := json.Unmarshal([]byte(data), &idMethod)
		h, ok := readHead([]byte(data), false)
		if ok != (err == nil) || ok && (!bytes.Equal(h.ID, idMethod.ID) || h.Method != idMethod.Method || h.Error != nil) {
			t.Fatalf("%s without error: %s %q %v; encoding/json: %s %q %v", data, h.ID, h.Method, ok, idMethod.ID, idMethod.Method, err)
		}
		h, ok = readHead([]byte(data), true)
		var want struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  *wire.Error     `json:"error"`
		}
		err = json.Unmarshal([]byte(data), &want)
		if ok != (err == nil) {
			t.Fatalf("%s: ok %v; encoding/json: %v", data, ok, err)
		}
		if !ok {
			return
		}
		if !bytes.Equal(h.ID, want.ID) || h.Method != want.Method || (h.Error == nil) != (want.Error == nil) ||
			h.Error != nil && h.Error.Code != want.Error.Code {
			t.Fatalf("%s: %s %q %+v; encoding/json: %s %q %+v", data, h.ID, h.Method, h.Error, want.ID, want.Method, want.Error)
		}
	})
}

func TestAmbiguousMember(t *testing.T) {
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf(`"m%d":%d`, i, i))
	}
	wide := "{" + strings.Join(many, ",") + `,"Wide":1,"wIDE":2}`
	for raw, want := range map[string]string{
		wide:                                        "wIDE", // past the 16 names compared pairwise
		"{" + strings.Join(many, ",") + "}":         "",
		`{"path":"/a","PATH":"/b"}`:                 "PATH",
		`{"a":1,"a":2}`:                             "a",
		`{"x":[1,{"b":1,"B":2}]}`:                   "B",
		`{"x":{"k":1,"\u212a":2}}`:                  "\u212a", // the Kelvin sign folds to K, as encoding/json matches it
		`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`: "",
		`{"a":"{\"a\":1,\"A\":2}"}`:                 "", // inside a string
		`[{"a":1},{"A":2}]`:                         "",
		`{}`:                                        "",
		``:                                          "",
	} {
		got, ok := ambiguousMember(json.RawMessage(raw))
		if got != want || ok != (want != "") {
			t.Errorf("ambiguousMember(%s) = %q, %v; want %q", raw, got, ok, want)
		}
	}
}

// FuzzAmbiguousMember holds ambiguousMember to a plain reading of the
// same JSON with encoding/json's tokenizer, each object's names compared
// pairwise with bytes.EqualFold.
func FuzzAmbiguousMember(f *testing.F) {
	for _, s := range []string{`{"path":"/a","PATH":"/b"}`, `{"a":[{"b":1,"B":2}]}`, `{"x":{"k":1,"\u212a":2}}`, `[{"a":1},{"A":2}]`, `{"a":"{\"a\":1,\"A\":2}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || depthOf(data) > MaxArgumentDepth {
			return
		}
		want := referenceAmbiguous(data)
		if got, ok := ambiguousMember(data); got != want || ok != (want != "") {
			t.Fatalf("ambiguousMember(%s) = %q, %v; the tokenizer finds %q", data, got, ok, want)
		}
	})
}

func depthOf(data []byte) int { return depth(json.RawMessage(data)) }

// referenceAmbiguous is the first name that repeats another of its
// object's (case-folded), in document order, or "".
func referenceAmbiguous(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		object, expectKey bool
		names             [][]byte
	}
	var stack []*level
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if n := len(stack); n > 0 && stack[n-1].expectKey {
			if name, ok := tok.(string); ok {
				for _, seen := range stack[n-1].names {
					if bytes.EqualFold(seen, []byte(name)) {
						return name
					}
				}
				stack[n-1].names = append(stack[n-1].names, []byte(name))
				stack[n-1].expectKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{object: true, expectKey: true})
		case json.Delim('['):
			stack = append(stack, &level{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
		if len(stack) == 0 {
			return ""
		}
	}
}

// TestEnvelopeDuplicate: a member named twice in the envelope or in
// params, exactly or but for its case, is found; deeper repeats are left
// to the checks of arguments (ambiguousMember).
func TestEnvelopeDuplicate(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                   "",
		`{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1},"params":{}}`:         "params",
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`:                            "id",
		`{"jsonrpc":"2.0","JSONRPC":"2.0","id":1,"method":"ping"}`:                   "JSONRPC",
		`{"jsonrpc":"2.0","id":1,"method":"a","params":{"name":"x","Name":"y"}}`:     "params.Name",
		`{"jsonrpc":"2.0","id":1,"method":"a","params":{"arguments":{"a":1,"a":2}}}`: "",
		`{"jsonrpc":"2.0","id":1,"method":"a","params":{"name":"x","arguments":{},"_meta":{},"cursor":"c","uri":"u","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"K":13}}`: "params.K",
	} {
		got, ok := envelopeDuplicate([]byte(body))
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q, %v; want %q", body, got, ok, want)
		}
	}
}

// FuzzEnvelopeDuplicate: envelopeDuplicate agrees with encoding/json's
// tokens on whether a message's top level or params name a member twice
// (bytes.EqualFold).
func FuzzEnvelopeDuplicate(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1},"params":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"a","params":{"name":"x","NAME":"y"}}`))
	f.Add([]byte(`{"a":1,"b":{"c":1,"c":2}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || len(bytes.TrimSpace(data)) == 0 || bytes.TrimSpace(data)[0] != '{' {
			return
		}
		_, got := envelopeDuplicate(data)
		var top map[string]json.RawMessage
		want := referenceDuplicate(data)
		if !want && json.Unmarshal(data, &top) == nil {
			for k, v := range top {
				if strings.EqualFold(k, "params") && len(bytes.TrimSpace(v)) > 0 && bytes.TrimSpace(v)[0] == '{' {
					want = referenceDuplicate(v)
				}
			}
		}
		if got != want {
			t.Errorf("%s: duplicate %v; want %v", data, got, want)
		}
	})
}

// referenceDuplicate reports whether the top level of the JSON object
// data names a member twice, by bytes.EqualFold, over encoding/json's
// tokens.
func referenceDuplicate(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return false
	}
	var names []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		for _, n := range names {
			if bytes.EqualFold([]byte(n), []byte(k.(string))) {
				return true
			}
		}
		names = append(names, k.(string))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
