package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// TestACPDialect: an initialize with clientCapabilities is ACP's: the
// agent's latest version for an unknown one, agentInfo, typed auth
// methods, auth.logout as an object; authenticate by methodId; -32000 on
// gated calls; logout.
func TestACPDialect(t *testing.T) {
	ctx := context.Background()
	h := newTestHost(t, baseConfig, Options{Version: "1.2.3"})
	c := dial(t, h)
	var init struct {
		ProtocolVersion   int               `json:"protocolVersion"`
		AgentInfo         map[string]string `json:"agentInfo"`
		AgentCapabilities struct {
			Auth map[string]json.RawMessage `json:"auth"`
		} `json:"agentCapabilities"`
		AuthMethods []wire.AuthMethod `json:"authMethods"`
	}
	if err := c.Call(ctx, wire.MethodInitialize, map[string]any{"protocolVersion": 99, "clientCapabilities": map[string]any{}}, &init); err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != 1 || init.AgentInfo["version"] != "1.2.3" || string(init.AgentCapabilities.Auth["logout"]) != "{}" {
		t.Errorf("initialize = %+v", init)
	}
	if len(init.AuthMethods) != 1 || init.AuthMethods[0].Type != "agent" || init.AuthMethods[0].Meta["agentauth.dev/oauth"] == nil {
		t.Errorf("authMethods = %+v", init.AuthMethods)
	}
	code := func(err error) int {
		var rpc *wire.Error
		if !errors.As(err, &rpc) {
			t.Fatalf("err = %v, want a JSON-RPC error", err)
		}
		return rpc.Code
	}
	if got := code(c.Call(ctx, wire.MethodWhoami, nil, nil)); got != wire.CodeACPAuthRequired {
		t.Errorf("gated call before authenticate: %d", got)
	}
	if got := code(c.Call(ctx, wire.MethodAuthenticate, map[string]any{"methodId": "dev"}, nil)); got != wire.CodeACPAuthRequired {
		t.Errorf("authenticate without a credential: %d", got)
	}
	var res json.RawMessage
	if err := c.Call(ctx, wire.MethodAuthenticate, map[string]any{"methodId": "dev", "_meta": map[string]string{wire.ACPTokenMetaKey: "t-alice"}}, &res); err != nil || string(res) != "{}" {
		t.Fatalf("authenticate = %s, %v", res, err)
	}
	if err := c.Call(ctx, wire.MethodWhoami, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, wire.MethodLogout, map[string]any{}, &res); err != nil || string(res) != "{}" {
		t.Fatalf("logout = %s, %v", res, err)
	}
	if got := code(c.Call(ctx, wire.MethodWhoami, nil, nil)); got != wire.CodeACPAuthRequired {
		t.Errorf("gated call after logout: %d", got)
	}
	// The design dialect has no logout.
	d := initialized(t, h, wire.DialectDesign)
	if got := code(d.Call(ctx, wire.MethodLogout, map[string]any{}, nil)); got != wire.CodeMethodNotFound {
		t.Errorf("design logout: %d", got)
	}
}

// TestPublishedExpiresIn: a token without an expiry held for expiresIn
// seconds (AHP authenticate), then pushed as auth/required "expired".
func TestPublishedExpiresIn(t *testing.T) {
	ctx := context.Background()
	h := newTestHost(t, baseConfig, Options{})
	c := initialized(t, h, wire.DialectPublished)
	one := int64(1)
	var res json.RawMessage
	if err := c.Call(ctx, wire.MethodAuthenticate, wire.AuthenticateParams{Channel: wire.RootChannel, Resource: h.Resource(), Token: "t-alice", ExpiresIn: &one}, &res); err != nil || string(res) != "{}" {
		t.Fatalf("authenticate = %s, %v", res, err)
	}
	if m := nextPush(t, c); m.Method != wire.MethodAuthRequired || !strings.Contains(string(m.Params), `"reason":"expired"`) {
		t.Errorf("push = %s %s", m.Method, m.Params)
	}
	zero := int64(0)
	err := c.Call(ctx, wire.MethodAuthenticate, wire.AuthenticateParams{Channel: wire.RootChannel, Resource: h.Resource(), Token: "t-alice", ExpiresIn: &zero}, nil)
	var rpc *wire.Error
	if !errors.As(err, &rpc) || rpc.Code != wire.CodeInvalidParams {
		t.Errorf("expiresIn 0: %v", err)
	}
}

// TestAuthenticateScopes: authenticate's scopes narrow the grant, and a
// scope the token lacks is refused with insufficient_scope.
func TestAuthenticateScopes(t *testing.T) {
	ctx := context.Background()
	h := newTestHost(t, baseConfig, Options{})
	c := initialized(t, h, wire.DialectPublished)
	p := wire.AuthenticateParams{Channel: wire.RootChannel, Resource: h.Resource(), Token: "t-admin", Scopes: []string{"agent:use"}}
	if err := c.Call(ctx, wire.MethodAuthenticate, p, nil); err != nil {
		t.Fatal(err)
	}
	var who map[string][]wire.WhoamiScheme
	if err := c.Call(ctx, wire.MethodWhoami, nil, &who); err != nil {
		t.Fatal(err)
	}
	if got := who["schemes"]; len(got) != 1 || strings.Join(got[0].Scopes, " ") != "agent:use" {
		t.Errorf("whoami = %+v, want the grant narrowed to agent:use", got)
	}
	p.Scopes = []string{"agent:use", "agent:other"}
	chs := challenges(t, c.Call(ctx, wire.MethodAuthenticate, p, nil))
	if len(chs) != 1 || chs[0].Error != wire.ErrInsufficientScope || !strings.Contains(chs[0].ErrorDescription, "agent:other") {
		t.Errorf("challenges = %+v", chs)
	}
}
