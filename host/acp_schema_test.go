package host

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentauth/agentauth/wire"
)

// recordingConn keeps every message the host sends.
type recordingConn struct {
	wire.Conn
	mu   sync.Mutex
	got  [][]byte
	sent map[string]string // request id → method
}

func (r *recordingConn) Read(ctx context.Context) ([]byte, error) {
	m, err := r.Conn.Read(ctx)
	if err == nil {
		r.mu.Lock()
		r.got = append(r.got, m)
		r.mu.Unlock()
	}
	return m, err
}

func (r *recordingConn) Write(ctx context.Context, msg []byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) == nil && m.ID != nil {
		r.mu.Lock()
		r.sent[string(m.ID)] = m.Method
		r.mu.Unlock()
	}
	return r.Conn.Write(ctx, msg)
}

// acpSchema loads the published ACP schema (testdata/acp/schema.json,
// agent-client-protocol schema/v1/schema.json at v1.7.0, 272bf799) as a
// whole, and as the one definition def.
func acpSchema(t *testing.T, def string) (*jsonschema.Resolved, map[string]any) {
	t.Helper()
	b, err := os.ReadFile("../testdata/acp/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if def != "" {
		doc = map[string]any{"$schema": doc["$schema"], "$defs": doc["$defs"], "$ref": "#/$defs/" + def}
	}
	b, _ = json.Marshal(doc)
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve %s: %v", def, err)
	}
	defs := doc["$defs"].(map[string]any)
	d, _ := defs[def].(map[string]any)
	return rs, d
}

// TestACPFramesMatchSchema: every frame serve sends on its ACP face —
// the initialize result, authenticate's -32000 and {}, a gated call's
// -32000, logout's {} and an unknown method's -32601 — validates against
// the published ACP JSON Schema, and the results of the schema's methods
// carry only the properties their response type declares (no AHP or
// design-dialect members).
func TestACPFramesMatchSchema(t *testing.T) {
	ctx := context.Background()
	h := newTestHost(t, baseConfig, Options{Version: "1.2.3"})
	rec := &recordingConn{Conn: pipeConn(t, h, 0), sent: map[string]string{}}
	c := wire.NewClient(rec)
	calls := []struct {
		method string
		params any
	}{
		{wire.MethodInitialize, wire.NewInitializeParams(wire.DialectACP, "")},
		{wire.MethodAuthenticate, map[string]any{"methodId": "dev"}},
		{wire.MethodWhoami, nil},
		{wire.MethodAuthenticate, map[string]any{"methodId": "dev", "_meta": map[string]string{wire.ACPTokenMetaKey: "t-alice"}}},
		{wire.MethodLogout, map[string]any{}},
		{"session/prompt", map[string]any{"sessionId": "x", "prompt": []any{}}},
	}
	for _, call := range calls {
		_ = c.Call(ctx, call.method, call.params, nil)
	}
	whole, _ := acpSchema(t, "")
	// The validator refuses what the schema forbids: a string
	// protocolVersion, a message without jsonrpc.
	if bad, _ := acpSchema(t, "InitializeResponse"); bad.Validate(map[string]any{"protocolVersion": "1"}) == nil {
		t.Fatal("the schema accepts a string protocolVersion")
	}
	if whole.Validate(map[string]any{"id": 1, "result": map[string]any{}}) == nil {
		t.Fatal("the schema accepts a message without jsonrpc")
	}
	responses := map[string]string{wire.MethodInitialize: "InitializeResponse", wire.MethodAuthenticate: "AuthenticateResponse", wire.MethodLogout: "LogoutResponse"}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != len(calls) {
		t.Fatalf("got %d frames for %d calls", len(rec.got), len(calls))
	}
	for _, frame := range rec.got {
		var v any
		if err := json.Unmarshal(frame, &v); err != nil {
			t.Fatal(err)
		}
		if err := whole.Validate(v); err != nil {
			t.Errorf("frame %s: %v", frame, err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result map[string]any  `json:"result"`
		}
		json.Unmarshal(frame, &m)
		def, ok := responses[rec.sent[string(m.ID)]]
		if !ok || m.Result == nil {
			continue
		}
		rs, d := acpSchema(t, def)
		if err := rs.Validate(m.Result); err != nil {
			t.Errorf("%s %s: %v", def, frame, err)
		}
		props, _ := d["properties"].(map[string]any)
		for k := range maps.Keys(m.Result) {
			if _, declared := props[k]; !declared {
				t.Errorf("%s carries %q, which ACP does not declare (declared: %v)", def, k, slices.Sorted(maps.Keys(props)))
			}
		}
	}
}
