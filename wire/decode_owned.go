package wire

import (
	"bytes"
	"encoding/json"
)

// DecodeOwned is Decode for bytes the caller hands over: the message's
// ID and Params share data's memory, which must not change afterwards.
// A request or notification written plainly is read without
// encoding/json's decoding (a gateway reads one per call): after
// json.Valid, one pass over its members, which must be jsonrpc ("2.0"),
// method (a string of printable ASCII without escapes), params (an object
// or an array) and id (a number or a string), each at most once and spelled
// exactly. Any other message goes to Decode, which makes every refusal;
// what DecodeOwned accepts, Decode accepts as the same message.
func DecodeOwned(data []byte) (*Message, *Error) {
	if m, ok := decodePlain(data); ok {
		return m, nil
	}
	return Decode(data)
}

// decodePlain reads a plainly written request or notification (see
// DecodeOwned), or reports false.
func decodePlain(data []byte) (*Message, bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return nil, false
	}
	m := &Message{}
	var seenID, seenJSONRPC, seenParams bool
	ok := true
	eachMember(data, func(n, v []byte) {
		if !ok {
			return
		}
		switch string(n) {
		case "jsonrpc":
			ok = !seenJSONRPC && string(v) == `"`+Version+`"`
			seenJSONRPC, m.JSONRPC = true, Version
		case "id":
			ok = !seenID && (v[0] == '"' || v[0] == '-' || v[0] >= '0' && v[0] <= '9')
			seenID, m.ID = true, ID{raw: v}
		case "method":
			ok = m.Method == "" && plainString(v)
			if ok {
				m.Method = methodName(v[1 : len(v)-1])
			}
		case "params":
			ok = !seenParams && (v[0] == '{' || v[0] == '[')
			seenParams, m.Params = true, v
		default:
			ok = false
		}
	})
	if !ok || !seenJSONRPC || m.Method == "" {
		return nil, false
	}
	return m, true
}

// plainString reports whether the JSON value v is a string of printable
// ASCII without escapes, not empty: its bytes are its text.
func plainString(v []byte) bool {
	if len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		if c < ' ' || c > '~' || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

// methodName is the method b names, without allocating for the methods
// of MCP a gateway forwards most.
func methodName(b []byte) string {
	switch string(b) {
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "resources/read":
		return "resources/read"
	case "prompts/get":
		return "prompts/get"
	case "ping":
		return "ping"
	case MethodInitialize:
		return MethodInitialize
	case "notifications/initialized":
		return "notifications/initialized"
	}
	return string(b)
}
