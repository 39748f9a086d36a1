package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// EncodeResult writes byte for byte what Encode(NewResult(…)) writes:
// compact, HTML-escaped, a null id when there is none.
func TestEncodeResultMatchesEncode(t *testing.T) {
	ids := []wire.ID{wire.NumberID(7), wire.StringID("a<b"), {}}
	results := []any{
		nil,
		struct{}{},
		map[string]any{"text": "a <b> & c\u2028", "n": 1.5, "list": []string{"x y"}},
		json.RawMessage(" { \"spaced\" : [1, 2] , \"html\": \"<&>\" } "),
		json.RawMessage("null"),
		[]int{},
	}
	for _, id := range ids {
		for _, r := range results {
			m, err := wire.NewResult(id, r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := wire.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := wire.EncodeResult(id, r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("EncodeResult(%s, %v)\n got %s\nwant %s", id, r, got, want)
			}
		}
	}
	if _, err := wire.EncodeResult(wire.NumberID(1), json.RawMessage("{")); err == nil {
		t.Error("EncodeResult of invalid JSON: no error")
	}
}
