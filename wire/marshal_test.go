package wire

import (
	"encoding/json"
	"testing"
)

// MarshalJSON writes exactly what encoding/json writes for the message's
// fields (the hand-written encoder must not drift from it).
func TestMessageMarshalMatchesEncodingJSON(t *testing.T) {
	type plain struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Method  string          `json:"method,omitempty"`
		Params  json.RawMessage `json:"params,omitempty"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
	}
	for _, m := range []*Message{
		{JSONRPC: Version, ID: NumberID(7), Method: "tools/call", Params: json.RawMessage(`{ "a" : [1, 2],
		  "html": "<b>&</b>", "sep": "` + "\u2028" + `" }`)},
		{JSONRPC: Version, Method: "notifications/x"},
		{JSONRPC: Version, ID: StringID("a<b"), Result: json.RawMessage(`{"ok":true}`)},
		{JSONRPC: Version, ID: NumberID(1), Error: &Error{Code: -32007, Message: `say "hi" <now> é`, Data: json.RawMessage(`{"x": 1}`)}},
		{JSONRPC: Version, Error: &Error{Code: -32700, Message: "parse error"}},
		{JSONRPC: Version, Result: json.RawMessage(`null`)},
	} {
		got, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		p := plain{JSONRPC: m.JSONRPC, Method: m.Method, Params: m.Params, Result: m.Result, Error: m.Error}
		if !m.ID.IsZero() {
			p.ID = m.ID.raw
		}
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if m.Method == "" && m.ID.IsZero() { // a response with an unreadable id: "id": null, last
			want = append(want[:len(want)-1], `,"id":null}`...)
		}
		if string(got) != string(want) {
			t.Errorf("MarshalJSON\n got %s\nwant %s", got, want)
		}
	}
	if _, err := (&Message{JSONRPC: Version, Method: "m", Params: json.RawMessage(`{bad`)}).MarshalJSON(); err == nil {
		t.Error("invalid params marshalled without an error")
	}
}

// The hot path asks every answer whether it is -32007: for a success (a
// nil error) that costs no allocation.
func TestAuthRequiredOfNilAllocatesNothing(t *testing.T) {
	var e *Error
	if n := testing.AllocsPerRun(100, func() { e.AuthRequired() }); n != 0 {
		t.Errorf("(*Error)(nil).AuthRequired allocates %v times, want 0", n)
	}
}
