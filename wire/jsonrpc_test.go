package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

func mustEncode(t *testing.T, m *wire.Message) string {
	t.Helper()
	b, err := wire.Encode(m)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return string(b)
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	req, _ := wire.NewRequest(wire.StringID("req-1"), "echo", map[string]string{"text": "hi"})
	numReq, _ := wire.NewRequest(wire.NumberID(42), "ping", nil)
	note, _ := wire.NewNotification("notify/authRequired", wire.NotifyAuthRequiredParams{SchemeID: "dev", State: wire.StateExpired})
	res, _ := wire.NewResult(wire.NumberID(7), map[string]bool{"authenticated": true})
	nullRes, _ := wire.NewResult(wire.StringID("n"), nil)
	errResp := wire.NewErrorResponse(wire.StringID("e"), wire.Errorf(wire.CodeMethodNotFound, "method %q not found", "nope"))

	tests := []struct {
		name string
		msg  *wire.Message
		want string
	}{
		{"request with string id", req, `{"jsonrpc":"2.0","id":"req-1","method":"echo","params":{"text":"hi"}}`},
		{"request with number id", numReq, `{"jsonrpc":"2.0","id":42,"method":"ping"}`},
		{"notification", note, `{"jsonrpc":"2.0","method":"notify/authRequired","params":{"schemeId":"dev","resource":"","state":"expired"}}`},
		{"result", res, `{"jsonrpc":"2.0","id":7,"result":{"authenticated":true}}`},
		{"null result", nullRes, `{"jsonrpc":"2.0","id":"n","result":null}`},
		{"error", errResp, `{"jsonrpc":"2.0","id":"e","error":{"code":-32601,"message":"method \"nope\" not found"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustEncode(t, tt.msg)
			if got != tt.want {
				t.Fatalf("Encode:\n got %s\nwant %s", got, tt.want)
			}
			if strings.Contains(got, "\n") {
				t.Fatalf("encoded message contains a newline: %q", got)
			}
			m, derr := wire.Decode([]byte(got))
			if derr != nil {
				t.Fatalf("Decode: %v", derr)
			}
			if again := mustEncode(t, m); again != tt.want {
				t.Fatalf("re-encoded after decode:\n got %s\nwant %s", again, tt.want)
			}
			if m.IsRequest() != tt.msg.IsRequest() || m.IsNotification() != tt.msg.IsNotification() || m.IsResponse() != tt.msg.IsResponse() {
				t.Fatalf("kind changed in the round trip: request=%v notification=%v response=%v",
					m.IsRequest(), m.IsNotification(), m.IsResponse())
			}
		})
	}
}

// A response must echo the request's id exactly as it was sent.
func TestIDEchoedVerbatim(t *testing.T) {
	for _, raw := range []string{`"abc"`, `"with \"quotes\""`, `0`, `-3`, `1.50`, `12345678901234567890`, `1e3`} {
		t.Run(raw, func(t *testing.T) {
			m, derr := wire.Decode([]byte(`{"jsonrpc":"2.0","id":` + raw + `,"method":"ping"}`))
			if derr != nil {
				t.Fatalf("Decode: %v", derr)
			}
			if !m.IsRequest() {
				t.Fatalf("message with id %s is not a request", raw)
			}
			resp, _ := wire.NewResult(m.ID, struct{}{})
			want := `{"jsonrpc":"2.0","id":` + raw + `,"result":{}}`
			if got := mustEncode(t, resp); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		code   int
		wantID string // the id salvaged for the answer ("" when none)
	}{
		{"empty", ``, wire.CodeParseError, ""},
		{"blank", " \t ", wire.CodeParseError, ""},
		{"truncated object", `{"jsonrpc":"2.0","id":1,`, wire.CodeParseError, ""},
		{"not json", `hello`, wire.CodeParseError, ""},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"ping"} x`, wire.CodeParseError, ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, wire.CodeInvalidRequest, ""},
		{"truncated batch (JSON-RPC 2.0 §6)", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc"`, wire.CodeParseError, ""},
		{"string", `"ping"`, wire.CodeInvalidRequest, ""},
		{"number", `42`, wire.CodeInvalidRequest, ""},
		{"missing jsonrpc", `{"id":1,"method":"ping"}`, wire.CodeInvalidRequest, "1"},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":"a","method":"ping"}`, wire.CodeInvalidRequest, `"a"`},
		{"nothing to do", `{"jsonrpc":"2.0","id":2}`, wire.CodeInvalidRequest, "2"},
		{"request with result", `{"jsonrpc":"2.0","id":3,"method":"ping","result":{}}`, wire.CodeInvalidRequest, "3"},
		{"method not a string", `{"jsonrpc":"2.0","id":4,"method":5}`, wire.CodeInvalidRequest, "4"},
		{"id an object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, wire.CodeInvalidRequest, ""},
		{"id a boolean", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, wire.CodeInvalidRequest, ""},
		{"scalar params", `{"jsonrpc":"2.0","id":5,"method":"echo","params":"text"}`, wire.CodeInvalidRequest, "5"},
		// Member names are case-sensitive (encoding/json is not).
		{"upper-case members", `{"JSONRPC":"2.0","METHOD":"whoami"}`, wire.CodeInvalidRequest, ""},
		{"Method", `{"jsonrpc":"2.0","id":6,"Method":"whoami"}`, wire.CodeInvalidRequest, "6"},
		{"ID: no id echoed", `{"jsonrpc":"2.0","ID":7,"method":"whoami"}`, wire.CodeInvalidRequest, ""},
		{"both spellings", `{"jsonrpc":"2.0","id":8,"method":"whoami","METHOD":"ping"}`, wire.CodeInvalidRequest, "8"},
		{"Unicode folding (long s)", `{"j\u017fonrpc":"2.0","id":9,"method":"whoami"}`, wire.CodeInvalidRequest, "9"},
		{"Params", `{"jsonrpc":"2.0","id":10,"method":"echo","Params":{}}`, wire.CodeInvalidRequest, "10"},
		{"error object's CODE", `{"jsonrpc":"2.0","id":11,"error":{"CODE":1,"message":"m"}}`, wire.CodeInvalidRequest, "11"},
		{"wrong type and a miscased id", `{"jsonrpc":"2.0","Id":12,"method":5}`, wire.CodeInvalidRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, derr := wire.Decode([]byte(tt.in))
			if derr == nil {
				t.Fatalf("Decode(%q) succeeded, want error %d", tt.in, tt.code)
			}
			if derr.Code != tt.code {
				t.Fatalf("Decode(%q) = %d %q, want code %d", tt.in, derr.Code, derr.Message, tt.code)
			}
			var gotID string
			if m != nil {
				gotID = m.ID.String()
			}
			if gotID != tt.wantID {
				t.Fatalf("salvaged id = %q, want %q", gotID, tt.wantID)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","method":"setAuthToken","params":"tok"}`,
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":null}`,
		`{"jsonrpc":"2.0","id":1,"result":null}`,
		`  {"jsonrpc":"2.0","id":1,"result":{},"extra":"ignored"}  `,
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"METHOD":"inside params: the method's business"}}`,
		`{"jsonrpc":"2.0","\u0069d":1,"method":"ping","Methods":"unknown, ignored"}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","Extra":{"CODE":2}}}`,
	} {
		if _, derr := wire.Decode([]byte(in)); derr != nil {
			t.Errorf("Decode(%s): %v", in, derr)
		}
	}
}

// JSON-RPC 2.0 §5: an error answering a message whose id could not be read
// carries "id": null; a notification carries no id at all.
// The -32600 for a miscased member names it and the spelling it imitates.
func TestDecodeMiscasedMessage(t *testing.T) {
	_, derr := wire.Decode([]byte(`{"JSONRPC":"2.0","METHOD":"whoami"}`))
	want := `invalid request: member "JSONRPC" is not "jsonrpc": member names are case-sensitive`
	if derr == nil || derr.Message != want {
		t.Fatalf("Decode = %v, want %q", derr, want)
	}
}

func TestErrorResponseWithoutIDHasNullID(t *testing.T) {
	_, derr := wire.Decode([]byte(`{oops`))
	got := mustEncode(t, wire.NewErrorResponse(wire.ID{}, derr))
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(got), &fields); err != nil {
		t.Fatal(err)
	}
	if id, ok := fields["id"]; !ok || string(id) != "null" {
		t.Fatalf("error response %s: want \"id\":null", got)
	}
	note, _ := wire.NewNotification("auth/required", nil)
	if s := mustEncode(t, note); strings.Contains(s, `"id"`) {
		t.Fatalf("notification carries an id: %s", s)
	}
}

func TestErrorData(t *testing.T) {
	e := wire.Errorf(wire.CodeUnsupportedVersion, "unsupported protocol version").
		WithData(wire.UnsupportedVersionData{SupportedVersions: []string{"0.9.0"}})
	got := mustEncode(t, wire.NewErrorResponse(wire.NumberID(1), e))
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"unsupported protocol version","data":{"supportedVersions":["0.9.0"]}}}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if s := e.Error(); !strings.Contains(s, "-32005") || !strings.Contains(s, "unsupported protocol version") {
		t.Fatalf("Error() = %q, want the code and message", s)
	}
}
