package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentauth/agentauth/wire"
)

// Reading and writing JSON-RPC messages: the pieces every layer shares.

// statelessVersion is the MCP revision without sessions (MCP 2026-07-28
// "Lifecycle"), whose errors map to HTTP statuses ("Transports").
const statelessVersion = "2026-07-28"

func sameID(raw json.RawMessage, id wire.ID) bool {
	return len(raw) > 0 && string(bytes.TrimSpace(raw)) == id.String()
}

// head is what the gateway reads of a backend's message.
type head struct {
	ID     json.RawMessage
	Method string
	Error  *wire.Error
}

// readHead reads a backend's message as json.Unmarshal into a head would
// (members matched ignoring case, the last one winning; false for what
// is not JSON, not an object or null, or has a method, or with withError
// an error, of the wrong type; without withError, the error is not read),
// but from one check of the whole message (json.Valid) and a walk over
// its member names: the result, which can be large, is not decoded.
func readHead(data []byte, withError bool) (h head, ok bool) {
	if !json.Valid(data) {
		return h, false
	}
	t := bytes.TrimSpace(data)
	if t[0] != '{' {
		return h, string(t) == "null"
	}
	ok = true
	wire.Members(t, func(n, v []byte) {
		switch {
		case bytes.EqualFold(n, []byte("id")):
			h.ID = v
		case bytes.EqualFold(n, []byte("method")):
			if string(v) != "null" {
				var isString bool
				h.Method, isString = jsonString(v)
				ok = ok && isString
			}
		case withError && bytes.EqualFold(n, []byte("error")):
			if string(v) == "null" {
				h.Error = nil
			} else if h.Error = new(wire.Error); json.Unmarshal(v, h.Error) != nil {
				ok = false
			}
		}
	})
	return h, ok
}

func mustEncode(m *wire.Message) []byte {
	b, _ := m.MarshalJSON()
	return b
}

// MCP method names the gateway looks into.
const (
	methodToolsList = "tools/list"
	methodToolsCall = "tools/call"
)

// MCP error codes: URLElicitationRequiredError (MCP 2025-11-25
// "Elicitation", URL mode) and MISSING_REQUIRED_CLIENT_CAPABILITY (MCP
// 2026-07-28).
const (
	codeURLElicitationRequired  = -32042
	codeMissingClientCapability = -32021
)

// toolsCallParams are the parts of tools/call the gateway reads.
type toolsCallParams struct {
	Name string
	// Arguments are the raw arguments, a part of the message.
	Arguments      json.RawMessage
	InputResponses map[string]json.RawMessage
}

// toolsCallMembers are the members of tools/call params the gateway
// reads (MCP 2025-11-25 "Tools", CallToolRequest; 2026-07-28 adds
// inputResponses).
var toolsCallMembers = []string{"name", "arguments", "inputResponses", "_meta"}

// readToolsCall reads tools/call params (valid JSON: wire.Decode checked
// the message) in one pass over their member names, without decoding the
// arguments. A member it reads must be spelled exactly and appear once:
// encoding/json (and so Go backends) takes "NAME" for "name", JSON
// parsers differ on which of two "name" members counts, and the tool the
// gateway checks must be the tool the backend runs. It returns why the
// params are refused, or "".
func readToolsCall(params []byte) (p toolsCallParams, problem string) {
	var seen [4]bool
	wire.Members(params, func(n, v []byte) {
		if problem != "" {
			return
		}
		for i, want := range toolsCallMembers {
			switch {
			case string(n) == want:
				if seen[i] {
					problem = fmt.Sprintf("member %q appears twice", want)
					return
				}
				seen[i] = true
				switch i {
				case 0:
					var ok bool
					if p.Name, ok = jsonString(v); !ok {
						problem = `"name" is not a string`
					}
				case 1:
					p.Arguments = v
				case 2:
					// Decoded into a variable of its own: p stays on
					// the stack.
					var responses map[string]json.RawMessage
					if json.Unmarshal(v, &responses) != nil {
						problem = `"inputResponses" is not an object`
					}
					p.InputResponses = responses
				case 3:
					if v[0] != '{' && string(v) != "null" {
						problem = `"_meta" is not an object`
					}
				}
				return
			case bytes.EqualFold(n, []byte(want)):
				problem = fmt.Sprintf("member %q is not %q: member names are case-sensitive", n, want)
				return
			}
		}
	})
	if problem == "" && p.Name == "" {
		problem = `tools/call needs {"name": "…", "arguments": {…}}`
	}
	return p, problem
}

// jsonString decodes a JSON value (valid JSON) that should be a string:
// a plain one (no escape, valid UTF-8) is cut out of its quotes, others
// go through encoding/json; null is "", as for encoding/json.
func jsonString(v []byte) (string, bool) {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	return s, json.Unmarshal(v, &s) == nil
}

func mustResult(id wire.ID, v any) []byte {
	m, err := wire.NewResult(id, v)
	if err != nil {
		return nil
	}
	return mustEncode(m)
}

// internalID numbers the gateway's own requests to a backend.
var internalID atomic.Int64

func nextInternalID() wire.ID {
	return wire.StringID(fmt.Sprintf("agentauth-gateway-%d", internalID.Add(1)))
}

func mustNotification(method string, params any) *wire.Message {
	m, _ := wire.NewNotification(method, params)
	return m
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// setMember returns the JSON object data with the member at path set to v
// (objects on the way made when missing); data unchanged when it is not
// an object.
func setMember(data []byte, v json.RawMessage, path ...string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || m == nil {
		return data
	}
	if len(path) == 1 {
		m[path[0]] = v
	} else {
		inner := m[path[0]]
		if len(inner) == 0 || string(inner) == "null" {
			inner = json.RawMessage("{}")
		}
		m[path[0]] = setMember(inner, v, path[1:]...)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return b
}

// completeResult gives an answer of an older revision the resultType MCP
// 2026-07-28 results carry: input_required when it holds inputRequests
// (an SDK's multi round-trip answering an older client), else complete.
func completeResult(data []byte) []byte {
	var head struct {
		Method string                     `json:"method"`
		Result map[string]json.RawMessage `json:"result"`
	}
	if json.Unmarshal(data, &head) != nil || head.Method != "" || head.Result == nil || head.Result["resultType"] != nil {
		return data
	}
	if head.Result["inputRequests"] != nil {
		return setMember(data, json.RawMessage(`"input_required"`), "result", "resultType")
	}
	return setMember(data, json.RawMessage(`"complete"`), "result", "resultType")
}

// statelessStatus is the HTTP status of an MCP 2026-07-28 answer
// ("Transports", HTTP status codes; serve's own face maps them alike).
func statelessStatus(data []byte) int {
	var head struct {
		Error *wire.Error `json:"error"`
	}
	if json.Unmarshal(data, &head) != nil || head.Error == nil {
		return http.StatusOK
	}
	switch head.Error.Code {
	case wire.CodeMethodNotFound:
		return http.StatusNotFound
	case wire.CodeParseError, wire.CodeInvalidRequest, wire.CodeInvalidParams, -32020, codeMissingClientCapability, -32022:
		return http.StatusBadRequest
	case wire.CodeInternalError:
		return http.StatusInternalServerError
	}
	return http.StatusOK
}

// envelopeDuplicate finds a member named twice in a message's envelope:
// among its top-level members (jsonrpc, id, method, params, result,
// error) or among the members of its params. Parsers differ on which of
// two members counts (encoding/json: the last, matched ignoring case;
// others the first, or exactly), so serve, which checked one copy, must
// not forward a body whose backend may run the other. Names equal once
// case-folded count as one. It returns the second name; body is valid
// JSON (wire.Decode accepted it).
func envelopeDuplicate(body []byte) (string, bool) {
	var params []byte
	found, ok := duplicateMember(body, func(name, value []byte) {
		if bytes.EqualFold(name, []byte("params")) {
			params = value
		}
	})
	if ok || params == nil {
		return found, ok
	}
	if found, ok = duplicateMember(params, nil); ok {
		return "params." + found, true
	}
	return "", false
}

// duplicateMember finds two members of the JSON object obj whose names
// are equal once case-folded (foldName), calling each, when set, with
// every member before the second (in order, after its name was
// compared); it returns the second name.
func duplicateMember(obj []byte, each func(name, value []byte)) (string, bool) {
	var small [16][]byte // the names so far, compared pairwise
	names := small[:0]
	var folded map[string]bool // past 16 names
	found, dup := "", false
	seen := func(name []byte) bool {
		if folded == nil && len(names) < len(small) {
			for _, n := range names {
				if bytes.EqualFold(n, name) {
					return true
				}
			}
			names = append(names, name)
			return false
		}
		if folded == nil {
			folded = map[string]bool{}
			for _, n := range names {
				folded[foldName(n)] = true
			}
		}
		k := foldName(name)
		if folded[k] {
			return true
		}
		folded[k] = true
		return false
	}
	wire.Members(obj, func(name, value []byte) {
		if dup {
			return
		}
		if seen(name) {
			found, dup = string(name), true
			return
		}
		if each != nil {
			each(name, value)
		}
	})
	return found, dup
}
