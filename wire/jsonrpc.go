package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Version is the JSON-RPC protocol version every message carries.
const Version = "2.0"

// Standard JSON-RPC 2.0 error codes (JSON-RPC 2.0 §5.1) and the protocol's own.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeUnsupportedVersion answers an initialize whose offered versions
	// the server cannot speak; data carries supportedVersions.
	CodeUnsupportedVersion = -32005
	// CodeAuthRequired is AHP_AUTH_REQUIRED: data carries AuthRequiredData.
	CodeAuthRequired = -32007
)

// ID is a JSON-RPC request id: a string or a number, kept verbatim so that a
// response echoes exactly what the request sent. The zero ID is absent.
type ID struct{ raw json.RawMessage }

// StringID returns an ID holding a JSON string.
func StringID(s string) ID { b, _ := json.Marshal(s); return ID{raw: b} }

// NumberID returns an ID holding a JSON number.
func NumberID(n int64) ID { return ID{raw: json.RawMessage(fmt.Sprint(n))} }

// IsZero reports whether the ID is absent (a notification).
func (id ID) IsZero() bool { return len(id.raw) == 0 }

// String is the id as it appears on the wire (quoted when a string).
func (id ID) String() string { return string(id.raw) }

// MarshalJSON writes the id verbatim, or null when absent.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.IsZero() {
		return []byte("null"), nil
	}
	return id.raw, nil
}

// UnmarshalJSON accepts a string, a number or null; anything else is an error.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		id.raw = nil
		return nil
	}
	// A JSON value that starts with '"' is a string, one that starts with
	// '-' or a digit a number: checking that b is valid JSON is enough
	// (and costs no decoding).
	switch b[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if !json.Valid(b) {
			return errors.New("id is not valid JSON")
		}
	default:
		return errors.New("id must be a string or a number")
	}
	id.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Message is any JSON-RPC 2.0 message: a request (ID and Method), a
// notification (Method, no ID) or a response (ID and Result or Error).
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      ID              `json:"id,omitzero"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// MarshalJSON writes the message, giving a response whose id could not be
// read an explicit "id": null (JSON-RPC 2.0 §5); requests and notifications
// are written as they are.
//
// It writes what encoding/json would write for the struct, in one pass:
// params, result and error data were marshalled already and are only
// compacted (and HTML-escaped, as encoding/json does), never re-encoded.
func (m Message) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+len(m.Params)+len(m.Result))
	b = append(b, `{"jsonrpc":`...)
	b = appendString(b, m.JSONRPC)
	if !m.ID.IsZero() {
		b = append(append(b, `,"id":`...), m.ID.raw...)
	}
	if m.Method != "" {
		b = appendString(append(b, `,"method":`...), m.Method)
	}
	var err error
	if len(m.Params) > 0 {
		if b, err = appendRaw(append(b, `,"params":`...), m.Params); err != nil {
			return nil, err
		}
	}
	if len(m.Result) > 0 {
		if b, err = appendRaw(append(b, `,"result":`...), m.Result); err != nil {
			return nil, err
		}
	}
	if m.Error != nil {
		b = append(b, `,"error":{"code":`...)
		b = strconv.AppendInt(b, int64(m.Error.Code), 10)
		b = appendString(append(b, `,"message":`...), m.Error.Message)
		if len(m.Error.Data) > 0 {
			if b, err = appendRaw(append(b, `,"data":`...), m.Error.Data); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	if m.Method == "" && m.ID.IsZero() && (m.Result != nil || m.Error != nil) {
		b = append(b, `,"id":null`...)
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// appendRaw appends an already encoded JSON value, compacted and
// HTML-escaped as encoding/json writes a json.RawMessage; an invalid
// value is an error. A value marshalled by encoding/json (every result
// and error data of the host) is only validated and copied.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	if !needsRewrite(raw) {
		if !json.Valid(raw) {
			return nil, errors.New("json: error calling MarshalJSON for type json.RawMessage: invalid JSON")
		}
		return append(b, raw...), nil
	}
	out := bytes.NewBuffer(b) // appends to b in place
	if err := json.Compact(out, raw); err != nil {
		return nil, fmt.Errorf("json: error calling MarshalJSON for type json.RawMessage: %w", err)
	}
	added := out.Bytes()[len(b):]
	if !needsEscape(added) { // spaces in strings, say: compact already
		return out.Bytes(), nil
	}
	var esc bytes.Buffer
	json.HTMLEscape(&esc, added)
	return append(b, esc.Bytes()...), nil
}

// needsEscape reports whether compact JSON holds characters encoding/json
// escapes for HTML (<, >, &, U+2028, U+2029, whose UTF-8 starts with 0xE2).
func needsEscape(b []byte) bool {
	for _, c := range b {
		switch c {
		case '<', '>', '&', 0xE2:
			return true
		}
	}
	return false
}

// needsRewrite reports whether raw may hold whitespace to compact or
// characters encoding/json escapes for HTML (<, >, &, U+2028, U+2029,
// whose UTF-8 starts with 0xE2).
func needsRewrite(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return true
		}
	}
	return false
}

// IsRequest reports whether m is a request expecting a response.
func (m *Message) IsRequest() bool { return m.Method != "" && !m.ID.IsZero() }

// IsNotification reports whether m is a notification.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID.IsZero() }

// IsResponse reports whether m answers a request.
func (m *Message) IsResponse() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

// decodeResult is the outcome of the call to method that the response m
// answers: its error, else nil with the result decoded into result (when
// result is not nil).
func (m *Message) decodeResult(method string, result any) error {
	if m.Error != nil {
		return m.Error
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(m.Result, result); err != nil {
		return fmt.Errorf("cannot read the %s result: %w", method, err)
	}
	return nil
}

// Error is a JSON-RPC error object (JSON-RPC 2.0 §5.1).
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// Errorf builds an Error with a formatted message and no data.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData returns a copy of e carrying data marshalled as JSON.
func (e *Error) WithData(data any) *Error {
	out := *e
	b, err := json.Marshal(data)
	if err == nil {
		out.Data = b
	}
	return &out
}

// NewRequest builds a request with params marshalled as JSON (nil: none).
func NewRequest(id ID, method string, params any) (*Message, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	return &Message{JSONRPC: Version, ID: id, Method: method, Params: raw}, nil
}

// NewNotification builds a notification with params marshalled as JSON.
func NewNotification(method string, params any) (*Message, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	return &Message{JSONRPC: Version, Method: method, Params: raw}, nil
}

// ErrEncodeResult answers a request whose result cannot be encoded.
var ErrEncodeResult = Errorf(CodeInternalError, "internal error: cannot encode the result")

// Respond is the response to request id: result, or rerr when set (an
// internal error when result cannot be encoded).
func Respond(id ID, result any, rerr *Error) *Message {
	if rerr != nil {
		return NewErrorResponse(id, rerr)
	}
	m, err := NewResult(id, result)
	if err != nil {
		return NewErrorResponse(id, ErrEncodeResult)
	}
	return m
}

// NewResult builds a success response.
func NewResult(id ID, result any) (*Message, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	return &Message{JSONRPC: Version, ID: id, Result: b}, nil
}

// NewErrorResponse builds an error response. A response to a message whose id
// could not be read carries a null id (JSON-RPC 2.0 §5).
func NewErrorResponse(id ID, e *Error) *Message {
	return &Message{JSONRPC: Version, ID: id, Error: e}
}

func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	return json.Marshal(params)
}

// Decode parses one JSON-RPC message. Its error is a ready *Error: -32700 for
// JSON that does not parse, -32600 for a well-formed value that is not a
// valid JSON-RPC 2.0 message. The returned message may carry a usable ID even
// when the error is -32600, so the caller can answer it.
func Decode(data []byte) (*Message, *Error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, Errorf(CodeParseError, "parse error: empty message")
	}
	if data[0] != '{' {
		if !json.Valid(data) {
			return nil, Errorf(CodeParseError, "parse error: not JSON")
		}
		if data[0] == '[' {
			return nil, Errorf(CodeInvalidRequest, "invalid request: batches are not supported")
		}
		return nil, Errorf(CodeInvalidRequest, "invalid request: a message must be a JSON object")
	}
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		if !json.Valid(data) {
			return nil, Errorf(CodeParseError, "parse error: %s", jsonErrorText(err))
		}
		// Valid JSON with a field of the wrong type: salvage the id if we can.
		var probe struct {
			ID ID `json:"id"`
		}
		if _, _, idMiscased := miscased(data); !idMiscased {
			_ = json.Unmarshal(data, &probe)
		}
		return &Message{ID: probe.ID}, Errorf(CodeInvalidRequest, "invalid request: %s", jsonErrorText(err))
	}
	// encoding/json matched member names case-insensitively; the protocol
	// does not. The id is echoed only when it was spelled "id".
	if name, want, idMiscased := miscased(data); name != "" {
		id := m.ID
		if idMiscased {
			id = ID{}
		}
		return &Message{ID: id}, Errorf(CodeInvalidRequest,
			"invalid request: member %q is not %q: member names are case-sensitive", name, want)
	}
	if m.JSONRPC != Version {
		return &m, Errorf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		return &m, Errorf(CodeInvalidRequest, "invalid request: no method, result or error")
	}
	if m.Method != "" && (m.Result != nil || m.Error != nil) {
		return &m, Errorf(CodeInvalidRequest, "invalid request: a request cannot carry a result or error")
	}
	if len(m.Params) > 0 && m.Params[0] != '{' && m.Params[0] != '[' && string(m.Params) != "null" {
		// JSON-RPC 2.0 §4.2 wants structured params; setAuthToken's bare
		// string is the one tolerated exception, handled by its method.
		if m.Method != MethodSetAuthToken {
			return &m, Errorf(CodeInvalidRequest, "invalid request: params must be an object or an array")
		}
	}
	return &m, nil
}

// The member names of a message (JSON-RPC 2.0 §4, §5) and of its error
// object (§5.1), which must be spelled exactly.
var (
	messageMembers = [][]byte{[]byte("jsonrpc"), []byte("id"), []byte("method"), []byte("params"), []byte("result"), []byte("error")}
	errorMembers   = [][]byte{[]byte("code"), []byte("message"), []byte("data")}
)

// miscased finds the first member of the message data (valid JSON), or of
// its error object, whose name equals a protocol member's name only when
// case is ignored (Unicode folding, as encoding/json matches: "METHOD",
// "jſonrpc"); it returns that name and the one it imitates, and whether any
// such member imitates "id". It reads member names only: values are skipped
// without being decoded, so the hot path is not parsed twice.
func miscased(data []byte) (name, want string, idMiscased bool) {
	check := func(members [][]byte, n []byte) {
		for _, m := range members {
			if bytes.Equal(n, m) {
				return // no two members' names differ only in case
			}
		}
		for _, m := range members {
			if bytes.EqualFold(n, m) {
				if name == "" {
					name, want = string(n), string(m)
				}
				idMiscased = idMiscased || string(m) == "id"
				return
			}
		}
	}
	eachMember(data, func(n, value []byte) {
		check(messageMembers, n)
		if string(n) == "error" {
			eachMember(value, func(n, _ []byte) { check(errorMembers, n) })
		}
	})
	return name, want, idMiscased
}

// eachMember calls f with the name (unescaped) and the raw value of each
// member of the JSON object obj, in order. It does nothing for a value that
// is not an object, and stops early on malformed JSON.
func eachMember(obj []byte, f func(name, value []byte)) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	for i++; ; i++ {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return
		}
		end := stringEnd(obj, i)
		if end < 0 {
			return
		}
		name := obj[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var s string
			if json.Unmarshal(obj[i:end], &s) != nil {
				return
			}
			name = []byte(s)
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipSpace(obj, i+1)
		vend := valueEnd(obj, i)
		if vend < 0 {
			return
		}
		f(name, obj[i:vend])
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string starting at b[i]
// (a '"'), or -1 if it does not end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++ // the escaped byte
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index just past the JSON value starting at b[i], or
// -1 if it does not end.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := stringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return len(b)
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at offset %d", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q has the wrong type (%s)", te.Field, te.Value)
	}
	return err.Error()
}

// EncodeResult serialises the response to id carrying result, as
// Encode(NewResult(id, result)) does, with result marshalled straight
// into the message rather than into a value of its own that is then
// copied.
func EncodeResult(id ID, result any) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, 64))
	buf.WriteString(`{"jsonrpc":"2.0",`)
	if !id.IsZero() {
		buf.WriteString(`"id":`)
		buf.Write(id.raw)
		buf.WriteByte(',')
	}
	buf.WriteString(`"result":`)
	// encoding/json's Encoder writes what Marshal does (compact,
	// HTML-escaped), and a newline.
	if err := json.NewEncoder(buf).Encode(result); err != nil {
		return nil, err
	}
	b := buf.Bytes()[:buf.Len()-1]
	if id.IsZero() {
		b = append(b, `,"id":null`...)
	}
	return append(b, '}'), nil
}

// Encode serialises a message as one line of JSON (no embedded newlines).
func Encode(m *Message) ([]byte, error) {
	if m.JSONRPC == "" {
		m.JSONRPC = Version
	}
	return m.MarshalJSON()
}
