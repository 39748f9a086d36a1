package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// deepSchema is an inputSchema nesting n objects by properties.
func deepSchema(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

// doublingSchema is an inputSchema whose $defs each apply the next one
// twice (allOf), n deep: 2^n evaluations of the last.
func doublingSchema(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string"}`, n))
	return `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
}

const cyclicSchema = `{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`

// TestCheckSchema: the schemas a hostile backend lists are refused with
// the reason; the recursive, referencing and anchored schemas real
// servers list are checked.
func TestCheckSchema(t *testing.T) {
	for _, tc := range []struct{ name, schema, refusal string }{
		{"ref cycle", cyclicSchema, `refers to itself without descending into the arguments, at "#/$defs/`},
		{"self through allOf", `{"type":"object","allOf":[{"$ref":"#"}]}`, "refers to itself"},
		{"dynamic ref cycle", `{"$dynamicAnchor":"n","anyOf":[{"$dynamicRef":"#n"}]}`, "refers to itself"},
		{"2,000 deep", deepSchema(2000), "nests 4001 deep, more than 128"},
		{"doubling", doublingSchema(30), "subschema evaluations per argument"},
		{"remote ref", `{"type":"object","properties":{"x":{"$ref":"https://schemas.example/x.json"}}}`, "has a $ref outside the schema"},
		{"ref to nothing", `{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}`, "has a $ref to no subschema"},
		{"not an object", `"string"`, "is not a JSON Schema"},
		{"missing", ``, "lists no inputSchema"},
		{"too big", `{"type":"object","description":"` + strings.Repeat("x", maxSchemaBytes) + `"}`, "bytes, more than"},

		{"recursive tree", `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`, ""},
		{"pydantic $defs", `{"$defs":{"Point":{"properties":{"x":{"type":"number"}},"required":["x"],"type":"object"}},"properties":{"p":{"$ref":"#/$defs/Point"}},"type":"object"}`, ""},
		{"draft-07 definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s"}}}`, ""},
		{"anchor", `{"$defs":{"s":{"$anchor":"str","type":"string"}},"properties":{"a":{"$ref":"#str"}}}`, ""},
		{"embedded resource", `{"$id":"https://example.test/root","$defs":{"s":{"$id":"s.json","type":"string"}},"properties":{"a":{"$ref":"s.json"},"b":{"$ref":"https://example.test/s.json"}}}`, ""},
		{"escaped pointer", `{"$defs":{"a/b c":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/a~1b%20c"}}}`, ""},
		{"doubling, shallow", doublingSchema(10), ""},
		{"deep within bounds", deepSchema(60), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := checkSchema(json.RawMessage(tc.schema))
			switch {
			case tc.refusal == "" && ts.refusal != "":
				t.Errorf("refused: %s", ts.refusal)
			case tc.refusal == "" && ts.res == nil:
				t.Error("no resolved schema")
			case tc.refusal != "" && !strings.Contains(ts.refusal, tc.refusal):
				t.Errorf("refusal %q, want it to say %q", ts.refusal, tc.refusal)
			case tc.refusal != "" && ts.res != nil:
				t.Error("refused, yet resolved")
			}
		})
	}
}

// hostileSchemas is a backend, JSON-RPC by hand, that lists tools with
// the given inputSchemas and answers every call with the tool's name;
// calls records the tools it ran.
func hostileSchemas(t *testing.T, schemas map[string]string) (*httptest.Server, *callLog) {
	t.Helper()
	var tools []string
	for name, s := range schemas {
		tools = append(tools, fmt.Sprintf(`{"name":%q,"inputSchema":%s}`, name, s))
	}
	list := `{"tools":[` + strings.Join(tools, ",") + `]}`
	log := &callLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || json.Unmarshal(body, &msg) != nil || msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result := `{}`
		switch msg.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`
		case methodToolsList:
			log.add("tools/list")
			result = list
		case methodToolsCall:
			log.add(msg.Params.Name)
			result = fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, "ran "+msg.Params.Name)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

// TestHostileSchemas: a backend whose tools carry a $ref cycle, a
// 2,000-deep schema or exponential applicators cannot end or stall
// serve: tools/list lists them, a call of each is refused naming the
// backend and the tool, the backend runs none, and the next call of an
// ordinary tool is answered. (Before schemas were checked, the first call
// ended the process: "fatal error: stack overflow".)
func TestHostileSchemas(t *testing.T) {
	be, log := hostileSchemas(t, map[string]string{
		"cyclic":   cyclicSchema,
		"deep":     deepSchema(2000),
		"doubling": doublingSchema(40),
		"echo":     `{"type":"object","properties":{"text":{"type":"string"}}}`,
	})
	srv, logs := front(t, Backend{Name: "hostile", URL: be.URL}, Policy{})
	sid := sessionOf(t, srv.URL, "tok-writer-0123456789")
	_, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	for _, name := range []string{"cyclic", "deep", "doubling", "echo"} {
		if !strings.Contains(body, `"name":"`+name+`"`) {
			t.Errorf("tools/list lacks %s: %.300s", name, body)
		}
	}
	for _, name := range []string{"cyclic", "deep", "doubling"} {
		_, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+name+`","arguments":{"x":"y"}}}`)
		if !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "serve cannot check the arguments of tool "+name+" of backend hostile") {
			t.Errorf("tools/call %s: %s", name, body)
		}
	}
	if log.ran("cyclic") || log.ran("deep") || log.ran("doubling") {
		t.Error("the backend ran a tool whose schema serve could not check")
	}
	_, _, body = post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if !strings.Contains(body, "ran echo") {
		t.Errorf("an ordinary call after the refusals: %s", body)
	}
	for _, name := range []string{"cyclic", "deep", "doubling"} {
		if !strings.Contains(logs.String(), `"tool":"`+name+`"`) {
			t.Errorf("no warning names tool %s: %s", name, logs.String())
		}
	}
}

// TestInexactNumbers: where a schema compares numbers, a number float64
// would round into passing is refused; ordinary numbers pass.
func TestInexactNumbers(t *testing.T) {
	be, log := hostileSchemas(t, map[string]string{
		"bounded": `{"type":"object","properties":{"n":{"type":"number","maximum":10},"z":{"type":"number","maximum":0},"i":{"type":"integer"}}}`,
	})
	srv, _ := front(t, Backend{Name: "numbers", URL: be.URL}, Policy{})
	sid := sessionOf(t, srv.URL, "tok-writer-0123456789")
	for args, refused := range map[string]bool{
		`{"n":10.0000000000000000001}`: true,
		`{"z":1e-400}`:                 true,
		`{"i":9007199254740993}`:       true,
		`{"i":1.00000000000000000001}`: true,
		`{"n":10}`:                     false,
		`{"n":0.1,"z":-0.5}`:           false,
		`{"n":9.999999999999998}`:      false,
		`{"i":9007199254740991}`:       false,
		`{"z":-0,"n":1E1}`:             false,
	} {
		_, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bounded","arguments":`+args+`}}`)
		if got := strings.Contains(body, "cannot check exactly"); got != refused {
			t.Errorf("arguments %s: refused %v, want %v: %s", args, got, refused, body)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if n := slices.Index(log.tools, "tools/list"); n >= 0 {
		log.tools = slices.Delete(log.tools, n, n+1)
	}
	if len(log.tools) != 5 {
		t.Errorf("the backend ran %d calls, want the 5 exact ones", len(log.tools))
	}
}

func TestFaithful(t *testing.T) {
	for lit, want := range map[string]bool{
		"0": true, "-0": true, "0.0e10": true, "10": true, "1e308": true, "1.7976931348623157e308": true,
		"0.1": true, "123456789012345": true, "0.30000000000000004": true, "5e-324": true,
		"1e309": false, "1e-400": false, "10.0000000000000000001": false, "9007199254740993": false,
		"2.2250738585072011e-308": false, "1e99999999999999999999": false,
	} {
		if got := faithful(lit); got != want {
			t.Errorf("faithful(%s) = %v, want %v", lit, got, want)
		}
	}
}

// BenchmarkLearnHostileSchemas is the cost of a tools/list answer with a
// 2,000-deep and an exponential schema (both refused), against one tool
// of an ordinary schema.
func BenchmarkLearnHostileSchemas(b *testing.B) {
	for _, bc := range []struct{ name, schema string }{
		{"ordinary", `{"type":"object","properties":{"text":{"type":"string"}}}`},
		{"deep2000", deepSchema(2000)},
		{"doubling40", doublingSchema(40)},
		{"cyclic", cyclicSchema},
	} {
		result := json.RawMessage(`{"tools":[{"name":"t","inputSchema":` + bc.schema + `}]}`)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				newToolCache().learn(result)
			}
		})
	}
}

// TestInvalidUTF8: a backend's answer with bytes that are not UTF-8
// reaches the client as valid UTF-8, each run of them a U+FFFD.
func TestInvalidUTF8(t *testing.T) {
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &msg) != nil || msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result := "{\"content\":[{\"type\":\"text\",\"text\":\"a\xff\xfeb\xc0\"}]}"
		switch msg.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"bytes","version":"1"}}`
		case methodToolsList:
			result = `{"tools":[{"name":"bytes","inputSchema":{"type":"object"}}]}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(be.Close)
	srv, _ := front(t, Backend{Name: "bytes", URL: be.URL}, Policy{})
	sid := sessionOf(t, srv.URL, "tok-writer-0123456789")
	_, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bytes","arguments":{}}}`)
	if !utf8.ValidString(body) || !strings.Contains(body, "a\uFFFDb\uFFFD") {
		t.Errorf("answer: %q", body)
	}
}

// FuzzCheckSchema: whatever a backend lists, checking it ends, and a
// schema it passes validates arguments without running away.
func FuzzCheckSchema(f *testing.F) {
	for _, s := range []string{cyclicSchema, deepSchema(10), doublingSchema(5), `{"$dynamicAnchor":"n","anyOf":[{"$dynamicRef":"#n"}]}`,
		`{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`, `{"$id":"https://x.test/a","$defs":{"b":{"$id":"b","$anchor":"c"}},"$ref":"b#c"}`} {
		f.Add(s, `{"children":[{"children":[]}]}`)
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		ts := checkSchema(json.RawMessage(schema))
		if (ts.refusal == "") != (ts.res != nil) {
			t.Fatalf("refusal %q with resolved %v", ts.refusal, ts.res != nil)
		}
		var v any
		if ts.res == nil || depth([]byte(args)) > MaxArgumentDepth || json.Unmarshal([]byte(args), &v) != nil {
			return
		}
		_ = ts.res.Validate(v)
	})
}

// FuzzFaithful: the digits and exponent decimal reads from a literal
// faithful passes are the same number (but for the sign, which decimal
// drops) in float64.
func FuzzFaithful(f *testing.F) {
	for _, lit := range []string{"0", "10.0000000000000000001", "1e-400", "9007199254740993", "0.30000000000000004", "-1.5E+3"} {
		f.Add(lit)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		var n json.Number
		if json.Unmarshal([]byte(lit), &n) != nil || !faithful(lit) {
			return
		}
		digits, exp, ok := decimal(lit)
		if !ok || len(digits) > 15 {
			return
		}
		a, _ := strconv.ParseFloat(lit, 64)
		b, _ := strconv.ParseFloat(digits+"e"+strconv.Itoa(exp), 64)
		if math.Abs(a) != b && !(digits == "" && a == 0) {
			t.Fatalf("%s: %v, as digits %s e%d: %v", lit, a, digits, exp, b)
		}
	})
}

// TestUnknownNamesListOnce: calls of names the backend does not list are
// refused, and make the backend list its tools once in relistAfter, not
// once a call.
func TestUnknownNamesListOnce(t *testing.T) {
	be, log := hostileSchemas(t, map[string]string{"echo": `{"type":"object"}`})
	srv, _ := front(t, Backend{Name: "listing", URL: be.URL}, Policy{})
	sid := sessionOf(t, srv.URL, "tok-writer-0123456789")
	for i := range 20 {
		_, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"nope%d","arguments":{}}}`, i+2, i))
		if !strings.Contains(body, "unknown tool") {
			t.Fatalf("call %d: %s", i, body)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if n := len(log.tools); n != 1 || log.tools[0] != "tools/list" {
		t.Errorf("the backend listed its tools %d times for 20 unknown names, want once", n)
	}
}

// TestArgumentPath: a schema location names the argument it checks as a
// caller writes it (the -32602 of bad arguments).
func TestArgumentPath(t *testing.T) {
	for loc, want := range map[string]string{
		"/properties/title":                            "title",
		"/properties/edits/items/properties/oldText":   "edits[].oldText",
		"/properties/pair/prefixItems/1":               "pair[1]",
		"/properties/tags/additionalProperties":        "tags.*",
		"/properties/env/patternProperties/^A~1B$":     "env.*",
		"/properties/a~1b/anyOf/1/properties/c":        "a/b.c",
		"/$defs/point/properties/x":                    "x",
		"/allOf/0":                                     "arguments",
		"/properties/m~0n/items/items/properties/deep": "m~n[][].deep",
	} {
		if got := argumentPath([]string{loc}, argumentWalk{}); got != want {
			t.Errorf("argumentPath(%q) = %q, want %q", loc, got, want)
		}
	}
}

// TestArgumentPathNamesTheElement: with the schema and the arguments, the
// -32602 message names the element an array's items schema refused, at
// every level, as a caller would look it up.
func TestArgumentPathNamesTheElement(t *testing.T) {
	checkArgumentPaths(t, `{"type": "object", "properties": {
		"edits": {"type": "array", "items": {"type": "object", "properties": {"oldText": {"type": "string"}}, "required": ["oldText"]}},
		"m": {"type": "array", "items": {"type": "array", "items": {"type": "object", "properties": {"deep": {"type": "integer"}}}}},
		"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]},
		"any": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "string"}]},
		"refd": {"type": "array", "items": {"$ref": "#/$defs/p"}},
		"self": {"type": "array", "items": {"type": "object", "properties": {"kids": {"$ref": "#/properties/self"}, "n": {"type": "integer"}}}}},
		"$defs": {"p": {"type": "object", "properties": {"x": {"type": "integer"}}}}}`, map[string]string{
		`{"edits": [{"oldText": "a"}, {"oldText": "b"}, {}]}`:  "argument edits[2] (schema /properties/edits/items)",
		`{"edits": [{"oldText": "a"}, {"oldText": 5}]}`:        "argument edits[1].oldText (schema /properties/edits/items/properties/oldText)",
		`{"m": [[{"deep": 1}], [{"deep": 1}, {"deep": "x"}]]}`: "argument m[1][1].deep (schema /properties/m/items/items/properties/deep)",
		`{"pair": ["a", [1, 2, "x"]]}`:                         "argument pair[1][2] (schema /properties/pair/prefixItems/1/items)",
		// Items that refer to a definition, and to the schema above them (a
		// tree): the path goes on through the $ref, though jsonschema-go
		// reports the location the $ref led to.
		`{"refd": [{"x": 1}, {"x": "y"}]}`:                         "argument refd[1].x (schema /$defs/p/properties/x)",
		`{"self": [{"n": 1}, {"n": 2, "kids": [{"n": "three"}]}]}`: "argument self[1].kids[0].n (schema /properties/self/items/properties/n)",
		// Past maxElementSearch elements the element is not looked for.
		`{"edits": [` + strings.Repeat(`{"oldText": "a"}, `, maxElementSearch) + `{}]}`:   "argument edits[] (schema /properties/edits/items)",
		`{"edits": [` + strings.Repeat(`{"oldText": "a"}, `, maxElementSearch-1) + `{}]}`: "argument edits[4095] (schema /properties/edits/items)",
	})
}

// TestArgumentPathThroughDefinitions: a Python MCP server's inputSchema
// (FastMCP turns a tool's pydantic arguments into $defs and $refs) names
// the argument inside the model, not the definition. The schema is
// complex_arguments_fn's, from modelcontextprotocol/python-sdk
// tests/server/fastmcp/test_func_metadata.py at 06681d6 (shortened), with
// a list of models as pydantic writes list[InnerModel].
func TestArgumentPathThroughDefinitions(t *testing.T) {
	valid := `"an_int": 1, "list_of_ints": [1, 2], "my_model_b": {"how_many_shrimp": 3, "ok": {"x": 1}, "y": null}`
	checkArgumentPaths(t, `{
		"$defs": {
			"InnerModel": {"properties": {"x": {"title": "X", "type": "integer"}}, "required": ["x"], "title": "InnerModel", "type": "object"},
			"SomeModelB": {"properties": {
				"how_many_shrimp": {"description": "How many shrimp in the tank???", "title": "How Many Shrimp", "type": "integer"},
				"ok": {"$ref": "#/$defs/InnerModel"},
				"y": {"title": "Y", "type": "null"}},
				"required": ["how_many_shrimp", "ok", "y"], "title": "SomeModelB", "type": "object"}},
		"properties": {
			"an_int": {"title": "An Int", "type": "integer"},
			"list_of_ints": {"items": {"type": "integer"}, "title": "List Of Ints", "type": "array"},
			"my_model_b": {"$ref": "#/$defs/SomeModelB"},
			"inners": {"items": {"$ref": "#/$defs/InnerModel"}, "title": "Inners", "type": "array"}},
		"required": ["an_int", "list_of_ints", "my_model_b"],
		"title": "complex_arguments_fnArguments", "type": "object"}`, map[string]string{
		`{"an_int": 1, "list_of_ints": [1, 2], "my_model_b": {"how_many_shrimp": 3, "ok": {"x": "1"}, "y": null}}`: "argument my_model_b.ok.x (schema /$defs/InnerModel/properties/x)",
		`{"an_int": 1, "list_of_ints": [1, 2], "my_model_b": {"how_many_shrimp": 3, "ok": {}, "y": null}}`:         "argument my_model_b.ok (schema /$defs/InnerModel)",
		`{"an_int": 1, "list_of_ints": [1, "2"], "my_model_b": {"how_many_shrimp": 3, "ok": {"x": 1}, "y": null}}`: "argument list_of_ints[1] (schema /properties/list_of_ints/items)",
		`{` + valid + `, "inners": [{"x": 1}, {"x": 2}, {"x": 2.5}]}`:                                              "argument inners[2].x (schema /$defs/InnerModel/properties/x)",
	})
}

// TestArgumentPathDraft07: a schema of draft-07, as zod-to-json-schema
// writes for the TypeScript SDK's servers (with a $ref back up the schema
// where a zod schema is used twice), names the element too.
func TestArgumentPathDraft07(t *testing.T) {
	checkArgumentPaths(t, `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {
		"from": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
		"to": {"$ref": "#/properties/from"}}, "additionalProperties": false}`, map[string]string{
		`{"from": [{"name": "a"}, {"name": 1}]}`:     "argument from[1].name (schema /properties/from/items/properties/name)",
		`{"to": [{"name": "a"}, {"name": "b"}, {}]}`: "argument to[2] (schema /properties/from/items)",
	})
}

// checkArgumentPaths validates each arguments (JSON) against schema (an
// inputSchema, JSON), which must refuse them, and checks the -32602 text
// begins with want.
func checkArgumentPaths(t *testing.T, schemaJSON string, cases map[string]string) {
	t.Helper()
	var schema jsonschema.Schema
	if err := json.Unmarshal([]byte(schemaJSON), &schema); err != nil {
		t.Fatal(err)
	}
	res, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range cases {
		var v any
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			t.Fatal(err)
		}
		err := res.Validate(v)
		if err == nil {
			t.Fatalf("%s: valid", args)
		}
		if got := schemaError(err, res, v); !strings.HasPrefix(got, want) {
			t.Errorf("%s:\n got %s\nwant %s…", args, got, want)
		}
	}
}
