package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/wire"
)

// The initialize results of PROTOCOL.md, in each dialect.
const (
	designInitResult = `{"protocolVersion":1,"serverSeq":0,"snapshots":[],
 "resourceMetadata":{"resource":"http://127.0.0.1:7777/mcp",
   "authSchemes":[{"scheme":"bearer","id":"dev","label":"agentauth dev issuer",
     "authorizationServers":["http://127.0.0.1:7777"],
     "scopesSupported":["agent:use"],"required":true},
     {"scheme":"bearer","id":"github","label":"GitHub",
     "authorizationServers":["https://github.com/login/oauth"],"required":false}]},
 "agentCapabilities":{"getAuthState":true,"auth":{"status":true}},
 "authMethods":[{"id":"dev","name":"agentauth dev issuer","description":"bearer token from http://127.0.0.1:7777"}]}`

	publishedInitResult = `{"protocolVersion":"0.9.0","serverSeq":3,
 "snapshots":[{"resource":"ahp-root://","state":{"agents":[{"provider":"agentauth","protectedResources":[
   {"resource":"http://127.0.0.1:7777/mcp","authorization_servers":["http://127.0.0.1:7777"],
    "scopes_supported":["agent:use"],"resource_name":"agentauth dev issuer","scheme_id":"dev","required":true},
   {"resource":"http://127.0.0.1:7777/mcp","authorization_servers":["https://github.com/login/oauth"],
    "resource_name":"GitHub","scheme_id":"github","required":false}]}]}}],
 "agentCapabilities":{"auth":{"status":true}}}`
)

var wantRequirements = []wire.Requirement{
	{SchemeID: "dev", Label: "agentauth dev issuer", Resource: "http://127.0.0.1:7777/mcp",
		AuthorizationServers: []string{"http://127.0.0.1:7777"}, ScopesSupported: []string{"agent:use"}, Required: true},
	{SchemeID: "github", Label: "GitHub", Resource: "http://127.0.0.1:7777/mcp",
		AuthorizationServers: []string{"https://github.com/login/oauth"}, Required: false},
}

func TestInitializeResultEitherDialect(t *testing.T) {
	tests := []struct {
		name        string
		raw         string
		dialect     wire.Dialect
		canQuery    bool
		requirement []wire.Requirement
	}{
		{"design", designInitResult, wire.DialectDesign, true, wantRequirements},
		{"published", publishedInitResult, wire.DialectPublished, true, wantRequirements},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r wire.InitializeResult
			if err := json.Unmarshal([]byte(tt.raw), &r); err != nil {
				t.Fatal(err)
			}
			if r.Dialect() != tt.dialect {
				t.Errorf("Dialect() = %v, want %v", r.Dialect(), tt.dialect)
			}
			if r.AgentCapabilities.CanQueryAuthState() != tt.canQuery {
				t.Errorf("CanQueryAuthState() = %v, want %v", r.AgentCapabilities.CanQueryAuthState(), tt.canQuery)
			}
			if diff := cmp.Diff(tt.requirement, r.Requirements()); diff != "" {
				t.Errorf("Requirements() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequirementsPreferResourceMetadataAndDefaultRequired(t *testing.T) {
	// Both members present: resourceMetadata wins.
	var both wire.InitializeResult
	if err := json.Unmarshal([]byte(publishedInitResult), &both); err != nil {
		t.Fatal(err)
	}
	both.ResourceMetadata = &wire.ResourceMetadata{Resource: "http://h/mcp",
		AuthSchemes: []wire.AuthScheme{{Scheme: "bearer", ID: "only", AuthorizationServers: []string{"http://h"}, Required: true}}}
	got := both.Requirements()
	if len(got) != 1 || got[0].SchemeID != "only" || got[0].Resource != "http://h/mcp" {
		t.Fatalf("Requirements() = %+v, want only the resourceMetadata scheme", got)
	}

	// Published dialect without "required": RFC 9728 documents are required by default.
	var r wire.InitializeResult
	raw := `{"protocolVersion":"0.9.0","snapshots":[{"resource":"ahp-root://","state":{"agents":[{"provider":"p",
	  "protectedResources":[{"resource":"http://h/mcp","authorization_servers":["http://h"]}]}]}}]}`
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	if reqs := r.Requirements(); len(reqs) != 1 || !reqs[0].Required {
		t.Fatalf("Requirements() = %+v, want one required requirement", reqs)
	}

	// No capability advertised: no auth-state query.
	var bare wire.InitializeResult
	if err := json.Unmarshal([]byte(`{"protocolVersion":1}`), &bare); err != nil {
		t.Fatal(err)
	}
	if bare.AgentCapabilities.CanQueryAuthState() || len(bare.Requirements()) != 0 {
		t.Fatalf("empty result: CanQueryAuthState=%v Requirements=%v", bare.AgentCapabilities.CanQueryAuthState(), bare.Requirements())
	}
}

func TestInitializeParamsDialect(t *testing.T) {
	tests := []struct {
		raw  string
		want wire.Dialect
	}{
		{`{"protocolVersion":1,"clientId":"cli-1"}`, wire.DialectDesign},
		{`{"protocolVersion":1,"clientId":"cli-1","clientCapabilities":{"auth":{"terminal":true}},"clientInfo":{"name":"agentauth","version":"1"}}`, wire.DialectDesign},
		{`{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"zed","version":"1"}}`, wire.DialectACP},
		{`{"channel":"ahp-root://","protocolVersions":["1.1.0","1.0.0","0.9.0"],"clientId":"cli-1"}`, wire.DialectPublished},
		{`{}`, wire.DialectDesign},
	}
	for _, tt := range tests {
		var p wire.InitializeParams
		if err := json.Unmarshal([]byte(tt.raw), &p); err != nil {
			t.Fatal(err)
		}
		if got := p.Dialect(); got != tt.want {
			t.Errorf("%s: Dialect() = %v, want %v", tt.raw, got, tt.want)
		}
	}
	one := wire.DesignProtocolVersion
	b, _ := json.Marshal(wire.InitializeParams{ProtocolVersion: &one, ClientID: "cli-1"})
	if got, want := string(b), `{"protocolVersion":1,"clientId":"cli-1"}`; got != want {
		t.Errorf("design params = %s, want %s", got, want)
	}
	b, _ = json.Marshal(wire.InitializeParams{Channel: wire.RootChannel, ProtocolVersions: wire.PublishedProtocolVersions, ClientID: "cli-1"})
	if got, want := string(b), `{"channel":"ahp-root://","protocolVersions":["1.1.0","1.0.0","0.9.0"],"clientId":"cli-1"}`; got != want {
		t.Errorf("published params = %s, want %s", got, want)
	}
}

func TestAuthenticateParamsShapes(t *testing.T) {
	tests := []struct {
		name   string
		params wire.AuthenticateParams
		want   string
	}{
		{"design", wire.AuthenticateParams{SchemeID: "dev", Scheme: wire.SchemeBearer, Token: "t0k"},
			`{"schemeId":"dev","scheme":"bearer","token":"t0k"}`},
		{"published", wire.AuthenticateParams{Channel: wire.RootChannel, Resource: "http://127.0.0.1:7777/mcp", Token: "t0k"},
			`{"channel":"ahp-root://","resource":"http://127.0.0.1:7777/mcp","token":"t0k"}`},
		{"published sign-out keeps the empty token", wire.AuthenticateParams{Channel: wire.RootChannel, Resource: "http://h/mcp"},
			`{"channel":"ahp-root://","resource":"http://h/mcp","token":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("got %s, want %s", b, tt.want)
			}
			var back wire.AuthenticateParams
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.params, back); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthRequiredErrorRoundTrip(t *testing.T) {
	req := true
	data := wire.AuthRequiredData{
		Challenges: []wire.Challenge{{SchemeID: "dev", Resource: "http://127.0.0.1:7777/mcp",
			Error: wire.ErrInvalidToken, ErrorDescription: "The access token expired", Scope: "agent:use"}},
		Resources: []wire.ProtectedResourceMetadata{{Resource: "http://127.0.0.1:7777/mcp",
			AuthorizationServers: []string{"http://127.0.0.1:7777"}, ScopesSupported: []string{"agent:use"}, Required: &req}},
	}
	encoded := mustEncode(t, wire.NewErrorResponse(wire.NumberID(9), wire.NewAuthRequiredError(data)))
	want := `{"jsonrpc":"2.0","id":9,"error":{"code":-32007,"message":"Authentication required","data":{` +
		`"challenges":[{"schemeId":"dev","resource":"http://127.0.0.1:7777/mcp","error":"invalid_token","errorDescription":"The access token expired","scope":"agent:use"}],` +
		`"resources":[{"resource":"http://127.0.0.1:7777/mcp","authorization_servers":["http://127.0.0.1:7777"],"scopes_supported":["agent:use"],"required":true}]}}}`
	if encoded != want {
		t.Fatalf("got  %s\nwant %s", encoded, want)
	}
	m, derr := wire.Decode([]byte(encoded))
	if derr != nil {
		t.Fatal(derr)
	}
	got, ok := m.Error.AuthRequired()
	if !ok {
		t.Fatal("AuthRequired() = false on a -32007 error")
	}
	if diff := cmp.Diff(data, got); diff != "" {
		t.Fatalf("data (-want +got):\n%s", diff)
	}
	if _, ok := wire.Errorf(wire.CodeInvalidParams, "x").AuthRequired(); ok {
		t.Fatal("AuthRequired() = true on a -32602 error")
	}
	var nilErr *wire.Error
	if _, ok := nilErr.AuthRequired(); ok {
		t.Fatal("AuthRequired() = true on a nil error")
	}
}

func TestChallengeString(t *testing.T) {
	tests := []struct {
		c    wire.Challenge
		want string
	}{
		{wire.Challenge{SchemeID: "dev", Error: "invalid_token", ErrorDescription: "The access token expired"},
			"dev: invalid_token — The access token expired"},
		{wire.Challenge{SchemeID: "dev", Error: "insufficient_scope", Scope: "agent:admin"},
			"dev: insufficient_scope (needs scope agent:admin)"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestParseSetAuthToken(t *testing.T) {
	for _, raw := range []string{`"tok"`, `{"token":"tok"}`} {
		got, err := wire.ParseSetAuthToken(json.RawMessage(raw))
		if err != nil || got != "tok" {
			t.Errorf("ParseSetAuthToken(%s) = %q, %v; want tok", raw, got, err)
		}
	}
	if _, err := wire.ParseSetAuthToken(json.RawMessage(`42`)); err == nil {
		t.Error("ParseSetAuthToken(42) succeeded")
	}
}

func TestNotificationShapes(t *testing.T) {
	n, _ := wire.NewNotification(wire.MethodAuthRequired, wire.AuthRequiredParams{Channel: wire.RootChannel,
		Resource: wire.ProtectedResourceMetadata{Resource: "http://h/mcp", AuthorizationServers: []string{"http://h"}}, Reason: "expired"})
	want := `{"jsonrpc":"2.0","method":"auth/required","params":{"channel":"ahp-root://","resource":{"resource":"http://h/mcp","authorization_servers":["http://h"]},"reason":"expired"}}`
	if got := mustEncode(t, n); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestScopeStrings(t *testing.T) {
	if got := wire.SplitScope("  a  b\tc "); !cmp.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("SplitScope = %q", got)
	}
	if got := wire.JoinScope([]string{"a", "b"}); got != "a b" {
		t.Errorf("JoinScope = %q", got)
	}
}
