package wire_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// Each message read is the caller's to keep: reading the next one (into
// the same pooled buffer) leaves it unchanged.
func TestWebSocketReadsAreIndependent(t *testing.T) {
	srv := wsEcho(t, 0)
	ctx := context.Background()
	c, err := wire.DialWebSocket(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first, second := `{"first":"`+strings.Repeat("a", 600)+`"}`, `{"second":"`+strings.Repeat("b", 900)+`"}`
	var got [][]byte
	for _, msg := range []string{first, second} {
		if err := c.Write(ctx, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	if string(got[0]) != first || string(got[1]) != second {
		t.Errorf("reads %.20q… and %.20q…, want the first and the second message", got[0], got[1])
	}
}
