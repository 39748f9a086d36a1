package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// The fuzz targets of wire. testdata/fuzz/run.sh runs every Fuzz target
// of the module for a fixed time; `go test` runs their seeds.

// FuzzParseWWWAuthenticate parses any header value: every challenge has a
// token scheme and lowercase param names, and a Bearer challenge written by
// FormatBearerChallenge parses back to the values it was given.
func FuzzParseWWWAuthenticate(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp", scope="agent:use"`,
		`Basic realm="simple", Bearer realm="api", scope="x y", DPoP algs="ES256 PS256"`,
		`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`,
		`Negotiate YIIB+w==, Bearer realm="r"`,
		"  Bearer   realm = \"r\" ,,  scope=\t\"s\" ,  ",
		`Bearer scope="a b`, `Bearer error_description="a \\ b \" c"`, `=,="`, ``,
	} {
		f.Add(s, "agent:use files:read", `say "hi" \ bye`)
	}
	f.Fuzz(func(t *testing.T, header, scope, realm string) {
		for _, c := range wire.ParseWWWAuthenticate([]string{header}) {
			if c.Scheme == "" || strings.IndexFunc(c.Scheme, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
				t.Fatalf("%q: scheme %q is not a token", header, c.Scheme)
			}
			for name := range c.Params {
				if name != strings.ToLower(name) {
					t.Fatalf("%q: param name %q is not lowercased", header, name)
				}
			}
		}
		params := map[string]string{"realm": realm, "scope": scope, "error": "insufficient_scope"}
		h := wire.FormatBearerChallenge(params)
		c, ok := wire.BearerChallenge([]string{h})
		if !ok {
			t.Fatalf("%q: no Bearer challenge", h)
		}
		for name, want := range params {
			if got := c.Param(name); got != want {
				t.Fatalf("%q: %s = %q, want %q", h, name, got, want)
			}
		}
	})
}

// isTokenChar is RFC 9110 §5.6.2 tchar.
func isTokenChar(r rune) bool {
	return r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// FuzzDecode decodes any bytes as a JSON-RPC message: -32700 exactly for
// what is not JSON, an accepted message re-encodes and decodes to the same
// message of the same kind, and no accepted message has a member spelled
// in another case than the protocol's (checked here with a json.Decoder,
// independently of Decode's own scan).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"req-1","method":"echo","params":{"text":"hi"}}`,
		`{"jsonrpc":"2.0","id":42,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notify/authRequired","params":{"schemeId":"dev","state":"expired"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"authenticated":true}}`,
		`{"jsonrpc":"2.0","id":"e","error":{"code":-32601,"message":"nope","data":{"x":[1,"\"}"]}}}`,
		`{"jsonrpc":"2.0","method":"setAuthToken","params":"tok"}`,
		`{"JSONRPC":"2.0","METHOD":"whoami"}`,
		`{"jsonrpc":"2.0","ID":1,"method":"ping","Method":"x"}`,
		`{"j\u017fonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","\u0069d":1.50,"method":"ping","extra":null}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{oops`, `"x"`, ``,
		` {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}} `,
		`{"jsonrpc":"2.0","method":"tools/call","method":"tools/list","id":1}`, `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-1.5e3,"method":"caf\u00e9"}`, `{"jsonrpc":"2.0","id":null,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":""}`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`, `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, `{"jsonrpc":"2.0","id":"\"q","method":"a\"b"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}x`, `{"jsonrpc":"2.0","id":1,"method":"p\u0069ng"}`, "{\"jsonrpc\":\"2.0\",\"method\":\"caf\xc3\xa9\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, derr := wire.Decode(data)
		sameDecoding(t, data, m, derr)
		trimmed := bytes.TrimSpace(data)
		valid := json.Valid(trimmed)
		if derr != nil {
			if valid == (derr.Code == wire.CodeParseError) {
				t.Fatalf("%q: code %d for JSON that is valid=%v", data, derr.Code, valid)
			}
			return
		}
		if !valid {
			t.Fatalf("%q: accepted, but it is not JSON", data)
		}
		if name := miscasedMember(t, trimmed); name != "" {
			t.Fatalf("%q: accepted with member %q", data, name)
		}
		enc, err := wire.Encode(m)
		if err != nil {
			t.Fatalf("%q: Encode: %v", data, err)
		}
		again, derr := wire.Decode(enc)
		if derr != nil {
			t.Fatalf("%q re-encoded as %s: Decode: %v", data, enc, derr)
		}
		enc2, err := wire.Encode(again)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("%q: encodes as %s, then as %s (%v)", data, enc, enc2, err)
		}
		if m.IsRequest() != again.IsRequest() || m.IsNotification() != again.IsNotification() || m.IsResponse() != again.IsResponse() {
			t.Fatalf("%q: the kind changed when re-encoded as %s", data, enc)
		}
	})
}

// sameDecoding fails t unless DecodeOwned decodes data as Decode did (m,
// derr): the same refusal, or a message that encodes the same.
func sameDecoding(t *testing.T, data []byte, m *wire.Message, derr *wire.Error) {
	t.Helper()
	o, oerr := wire.DecodeOwned(bytes.Clone(data))
	if (derr == nil) != (oerr == nil) || derr != nil && (derr.Code != oerr.Code || derr.Message != oerr.Message) {
		t.Fatalf("%q: Decode refuses with %v, DecodeOwned with %v", data, derr, oerr)
	}
	if (m == nil) != (o == nil) {
		t.Fatalf("%q: Decode returns %v, DecodeOwned %v", data, m, o)
	}
	if m == nil {
		return
	}
	a, aerr := wire.Encode(m)
	b, berr := wire.Encode(o)
	if aerr != nil || berr != nil || !bytes.Equal(a, b) || m.JSONRPC != o.JSONRPC || m.Method != o.Method || !bytes.Equal(m.Params, o.Params) {
		t.Fatalf("%q: Decode reads %s (%v), DecodeOwned %s (%v)", data, a, aerr, b, berr)
	}
}

// miscasedMember returns a member of the message, or of its error object,
// whose name equals a protocol member's only when case is ignored.
func miscasedMember(t *testing.T, data []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return ""
	}
	// A map keeps the last of duplicate names: walk the tokens instead.
	names := objectKeys(t, data)
	check := func(names []string, members ...string) string {
		for _, n := range names {
			for _, m := range members {
				if n != m && strings.EqualFold(n, m) {
					return n
				}
			}
		}
		return ""
	}
	if n := check(names, "jsonrpc", "id", "method", "params", "result", "error"); n != "" {
		return n
	}
	if e, ok := top["error"]; ok && len(bytes.TrimSpace(e)) > 0 && bytes.TrimSpace(e)[0] == '{' {
		return check(objectKeys(t, e), "code", "message", "data")
	}
	return ""
}

// objectKeys lists the member names of a JSON object, duplicates included.
func objectKeys(t *testing.T, obj []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q is not an object", obj)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// FuzzStdioConn reads any byte stream as newline-delimited JSON with a
// small size limit: the messages are exactly the non-empty lines (without
// their "\n" or "\r\n"), an over-long line is one TooLargeError after which
// reading goes on, and a written message reads back as itself.
func FuzzStdioConn(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n{\"b\":2}\r\n"), uint16(16))
	f.Add([]byte("short\nthis line is far too long for the limit\nok\n"), uint16(8))
	f.Add([]byte("exact\nexact!\n\r\n\r"), uint16(5))
	f.Add([]byte("no newline at the end, too long"), uint16(4))
	f.Add(bytes.Repeat([]byte("x"), 70000), uint16(65535))
	f.Fuzz(func(t *testing.T, stream []byte, limit16 uint16) {
		limit := int64(limit16)%4096 + 1
		ctx := context.Background()
		c := wire.NewStdioConn(bytes.NewReader(stream), io.Discard, nil, limit)
		lines := bytes.Split(stream, []byte("\n"))
		for i, line := range lines {
			last := i == len(lines)-1
			if !last {
				line = bytes.TrimSuffix(line, []byte("\r"))
			}
			if len(line) == 0 {
				continue
			}
			got, err := c.Read(ctx)
			if int64(len(line)) > limit {
				var tl *wire.TooLargeError
				if !errors.As(err, &tl) || !errors.Is(err, wire.ErrSkippedMessage) || tl.Limit != limit {
					t.Fatalf("line %d (%d bytes, limit %d): %q, %v; want a TooLargeError", i, len(line), limit, got, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, line) {
				t.Fatalf("line %d: %q, %v; want %q", i, got, err, line)
			}
		}
		if got, err := c.Read(ctx); err != io.EOF {
			t.Fatalf("after the last line: %q, %v; want io.EOF", got, err)
		}

		msg, _, _ := bytes.Cut(stream, []byte("\n"))
		msg = bytes.TrimRight(msg, "\r") // a message never ends in "\r": it would read as part of "\r\n"
		if len(msg) == 0 || int64(len(msg)) > limit {
			return
		}
		var out bytes.Buffer
		if err := wire.NewStdioConn(nil, &out, nil, limit).Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
		got, err := wire.NewStdioConn(&out, io.Discard, nil, limit).Read(ctx)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("wrote %q, read %q, %v", msg, got, err)
		}
	})
}
