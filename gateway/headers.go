package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentauth/agentauth/wire"
)

// The standard request headers of MCP 2026-07-28 ("Transports", Request
// Metadata): Mcp-Method and Mcp-Name repeat the body's method and name,
// Mcp-Param-NAME the tool arguments whose schema property names a header
// (x-mcp-header). A backend, or a router before it, may act on them
// without reading the body, so what it gets must be what serve checked:
// serve processes the body, so it checks the caller's headers against it
// and refuses a mismatch ("Server Validation": 400, -32020
// HeaderMismatch); then the backend gets headers rebuilt from the body,
// never the caller's. An Mcp-Param header that names no header argument
// of the tool is the caller's invention: serve, which knows the tool's
// schema, cannot check it, so it does not pass it on (the spec's
// intermediary, which forwards what it does not recognise, knows no
// schema). Requests of the earlier revisions, which define none of these
// headers, get none.

// codeHeaderMismatch is MCP 2026-07-28's HeaderMismatch.
const codeHeaderMismatch = -32020

// standardHeaders checks the caller's standard headers against the body
// and sets out's from the body; it refuses the call, and reports false,
// on a mismatch, or on a missing header of an MCP 2026-07-28 request.
func (k *call) standardHeaders(w http.ResponseWriter, r *http.Request, out http.Header) bool {
	for name := range out {
		if name == "Mcp-Method" || name == "Mcp-Name" || strings.HasPrefix(name, "Mcp-Param-") {
			delete(out, name)
		}
	}
	msg := k.msg
	if !msg.IsRequest() && !msg.IsNotification() {
		return true
	}
	required := k.stateless && msg.IsRequest()
	if problem := checkHeader(r.Header, "Mcp-Method", msg.Method, true, required); problem != "" {
		return k.mismatch(w, problem)
	}
	name, hasName := k.nameOf()
	if problem := checkHeader(r.Header, "Mcp-Name", name, hasName, required && hasName); problem != "" {
		return k.mismatch(w, problem)
	}
	var args map[string]json.RawMessage
	var params map[string]string
	if msg.Method == methodToolsCall && k.tool != "" {
		params = k.m.tools.headerParams(k.tool)
		if len(params) > 0 {
			args = argumentsOf(msg.Params)
		}
	}
	for arg, header := range params {
		v, ok := args[arg]
		value, valueOK := headerArgument(v)
		if problem := checkHeader(r.Header, "Mcp-Param-"+header, value, ok && valueOK, required && ok && valueOK); problem != "" {
			return k.mismatch(w, problem)
		}
	}
	if !k.stateless && !laterRevision(r.Header.Get("Mcp-Protocol-Version")) {
		return true
	}
	wire.SetStandardHeaders(out, msg)
	if len(params) > 0 {
		wire.SetParamHeaders(out, args, params)
	}
	return true
}

// argumentsOf is the arguments of tools/call params, decoded (nil when
// they are not an object).
func argumentsOf(params []byte) map[string]json.RawMessage {
	p, _ := readToolsCall(params)
	var args map[string]json.RawMessage
	_ = json.Unmarshal(p.Arguments, &args)
	return args
}

// laterRevision reports whether an MCP-Protocol-Version header names a
// revision other than those before the standard headers (2025-11-25 and
// earlier; none is 2025-03-26): a later one, or one serve does not know,
// whose backend may need the headers to route or to refuse the revision
// itself (-32022); it gets them as checked and rebuilt from the body.
func laterRevision(version string) bool {
	switch strings.TrimSpace(version) {
	case "", wire.MCPProtocolVersion, "2025-06-18", "2025-03-26", "2024-11-05":
		return false
	}
	return true
}

// mismatch refuses a call whose headers say another thing than its body.
func (k *call) mismatch(w http.ResponseWriter, problem string) bool {
	k.refuse(w, http.StatusBadRequest, wire.Errorf(codeHeaderMismatch, "header mismatch: %s", problem), "header mismatch")
	return false
}

// nameOf is the value Mcp-Name repeats: params.name of tools/call and
// prompts/get, params.uri of resources/read.
func (k *call) nameOf() (string, bool) {
	member := ""
	switch k.msg.Method {
	case methodToolsCall:
		if k.tool != "" {
			return k.tool, true
		}
		member = "name"
	case "prompts/get":
		member = "name"
	case "resources/read":
		member = "uri"
	default:
		return "", false
	}
	name, ok := "", false
	wire.Members(k.msg.Params, func(n, v []byte) {
		if string(n) == member {
			name, ok = jsonString(v)
		}
	})
	return name, ok
}

// headerArgument is an argument's value as its Mcp-Param header carries
// it: a string as is, a number or boolean as its JSON text (MCP
// 2026-07-28 "Transports", Value Encoding); false for null or anything
// else, which gets no header.
func headerArgument(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0 || string(v) == "null":
		return "", false
	case v[0] == '"':
		return jsonString(v)
	case string(v) == "true", string(v) == "false":
		return string(v), true
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		return string(v), true
	}
	return "", false
}

// checkHeader checks the caller's header name against the body's value
// want (when the body has one, has): sent once, and equal once trimmed
// (RFC 9110 §5.5) and decoded (=?base64?…?=); a number also when equal
// as a number. A header the body has no value for is a mismatch; a
// missing one only when required. It returns the problem, or "".
func checkHeader(h http.Header, name, want string, has, required bool) string {
	values := h.Values(name)
	switch {
	case len(values) == 0 && required:
		return "the " + name + " header is missing; send " + name + ": " + wire.QuoteValue(want)
	case len(values) == 0:
		return ""
	case len(values) > 1:
		return "the request has " + strconv.Itoa(len(values)) + " " + name + " headers; send one"
	case !has:
		return name + " is " + wire.QuoteValue(values[0]) + " but the body has no such value; send it only with one"
	}
	got, ok := decodeHeader(strings.TrimSpace(values[0]))
	if !ok {
		return name + " is " + wire.QuoteValue(values[0]) + ", whose =?base64?…?= value is not valid Base64 (RFC 4648 §4, with padding)"
	}
	if got == want || sameNumber(got, want) {
		return ""
	}
	return name + " is " + wire.QuoteValue(got) + " but the body says " + wire.QuoteValue(want) + "; send the body's value"
}

// sameNumber reports whether two texts are JSON numbers of one value
// (MCP 2026-07-28 "Server Validation": "42.0" and "42" are equal).
func sameNumber(a, b string) bool {
	if !json.Valid([]byte(a)) || !json.Valid([]byte(b)) || a == "" || b == "" || a[0] == '"' || b[0] == '"' {
		return false
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

// decodeHeader decodes a value sent as "=?base64?…?=" (MCP 2026-07-28
// "Transports", Value Encoding); any other value is literal.
func decodeHeader(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	if inner, ok = strings.CutSuffix(inner, "?="); !ok {
		return v, true
	}
	b, err := base64.StdEncoding.Strict().DecodeString(inner)
	return string(b), err == nil
}
