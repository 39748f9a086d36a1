package commands

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// publishedHost is an agent host that speaks only the published dialect
// (AHP 0.9, PROTOCOL.md): initialize in the design dialect is refused with
// -32005, the requirement comes as an RFC 9728 document in the snapshot
// (without a scheme id, as AHP has none), authenticate names the resource,
// and pushes are auth/required. It accepts the tokens in accept; whoami is
// refused with -32007 invalid_token while refuseWhoami > 0. Every token
// authenticate receives is sent on authenticated.
type publishedHost struct {
	t             *testing.T
	resource      wire.ProtectedResourceMetadata
	authenticated chan string

	mu           sync.Mutex
	accept       map[string]bool
	refuseWhoami int
	conn         *wire.WSConn
}

// newPublishedHost serves the host on WebSocket; it returns the host and its ws:// URL.
func newPublishedHost(t *testing.T, issuer string, accept ...string) (*publishedHost, string) {
	h := &publishedHost{t: t, authenticated: make(chan string, 16), accept: map[string]bool{},
		resource: wire.ProtectedResourceMetadata{Resource: testResource, AuthorizationServers: []string{issuer}, ScopesSupported: []string{"agent:use"}}}
	for _, a := range accept {
		h.accept[a] = true
	}
	srv := httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(srv.Close)
	return h, "ws://" + strings.TrimPrefix(srv.URL, "http://")
}

func (h *publishedHost) serve(w http.ResponseWriter, r *http.Request) {
	conn, err := wire.AcceptWebSocket(w, r, 1<<20)
	if err != nil {
		return
	}
	defer conn.Close()
	h.mu.Lock()
	h.conn = conn
	h.mu.Unlock()
	for {
		data, err := conn.Read(r.Context())
		if err != nil {
			return
		}
		m, derr := wire.Decode(data)
		if derr != nil || !m.IsRequest() {
			continue
		}
		result, rpcErr := h.answer(m)
		resp := wire.NewErrorResponse(m.ID, rpcErr)
		if rpcErr == nil {
			resp, _ = wire.NewResult(m.ID, result)
		}
		b, _ := wire.Encode(resp)
		if conn.Write(r.Context(), b) != nil {
			return
		}
	}
}

func (h *publishedHost) answer(m *wire.Message) (any, *wire.Error) {
	invalidToken := func(desc string) *wire.Error {
		return wire.NewAuthRequiredError(wire.AuthRequiredData{Challenges: []wire.Challenge{
			{Resource: testResource, Error: wire.ErrInvalidToken, ErrorDescription: desc}}})
	}
	switch m.Method {
	case wire.MethodInitialize:
		var p wire.InitializeParams
		if json.Unmarshal(m.Params, &p) != nil || p.Dialect() != wire.DialectPublished {
			return nil, wire.Errorf(wire.CodeUnsupportedVersion, "unsupported protocol version").
				WithData(wire.UnsupportedVersionData{SupportedVersions: []string{"0.9.0"}})
		}
		return wire.InitializeResult{ProtocolVersion: json.RawMessage(`"0.9.0"`), Snapshots: []wire.Snapshot{{Resource: wire.RootChannel,
			State: wire.SnapshotState{Agents: []wire.SnapshotAgent{{Provider: "fake", ProtectedResources: []wire.ProtectedResourceMetadata{h.resource}}}}}}}, nil
	case wire.MethodAuthenticate:
		var p wire.AuthenticateParams
		if json.Unmarshal(m.Params, &p) != nil || p.Resource != testResource || p.SchemeID != "" {
			return nil, wire.Errorf(wire.CodeInvalidParams, "not a published-dialect authenticate: %s", m.Params)
		}
		// The verdict is taken before the test hears of the token: a test
		// that changes accept once next returns changes the next verdict,
		// never this one.
		h.mu.Lock()
		ok := h.accept[p.Token]
		h.mu.Unlock()
		h.authenticated <- p.Token
		if !ok {
			return nil, invalidToken("unknown token")
		}
		return struct{}{}, nil // AHP AuthenticateResult: {}
	case wire.MethodWhoami:
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.refuseWhoami > 0 {
			h.refuseWhoami--
			return nil, invalidToken("The access token expired")
		}
		return map[string]any{"schemes": []wire.WhoamiScheme{{Subject: "alice", Scopes: []string{"agent:use"}}}}, nil
	}
	return nil, wire.Errorf(wire.CodeMethodNotFound, "method %q not found", m.Method)
}

// push sends auth/required with reason on the latest connection.
func (h *publishedHost) push(reason string) {
	h.t.Helper()
	n, _ := wire.NewNotification(wire.MethodAuthRequired, wire.AuthRequiredParams{Channel: wire.RootChannel, Resource: h.resource, Reason: reason})
	b, _ := wire.Encode(n)
	h.mu.Lock()
	conn := h.conn
	h.mu.Unlock()
	if err := conn.Write(context.Background(), b); err != nil {
		h.t.Fatal(err)
	}
}

// next waits for the token of the next authenticate.
func (h *publishedHost) next() string {
	h.t.Helper()
	select {
	case tok := <-h.authenticated:
		return tok
	case <-time.After(10 * time.Second):
		h.t.Fatal("no authenticate reached the host")
		return ""
	}
}

// publishedFixture is an authFixture whose target is a publishedHost, with
// a credential for it (no scheme id) holding at-1.
func publishedFixture(t *testing.T, accept ...string) (*authFixture, *publishedHost) {
	fx := newAuthFixture(t, "")
	h, target := newPublishedHost(t, fx.as.URL, accept...)
	fx.target = target
	fx.seed("at-1", time.Hour, func(c *store.Credential) { c.SchemeID = "" })
	return fx, h
}

// authenticate, status and call against a host that speaks only the
// published dialect: initialize falls back to it, authenticate names the
// resource, and auth/required pushes are answered.
func TestPublishedDialectHost(t *testing.T) {
	t.Run("authenticate", func(t *testing.T) {
		fx, h := publishedFixture(t, "at-1")
		code, stdout, stderr := fx.run("", "authenticate", "--json", "{TARGET}")
		if code != 0 || stderr != "✓ "+testResource+": accepted as alice (agent:use)\n" {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		if !strings.Contains(stdout, `"dialect":"published","authenticated":true`) {
			t.Errorf("stdout: %s", stdout)
		}
		if tok := h.next(); tok != "at-1" {
			t.Errorf("the host received %q", tok)
		}
	})
	t.Run("watch answers auth/required", func(t *testing.T) {
		fx, h := publishedFixture(t, "at-1", "at-2")
		fx.next = []string{"at-2"}
		r := fx.factory("")
		done := make(chan int, 1)
		go func() { done <- Run(r.f, fx.args([]string{"authenticate", "--watch", "{TARGET}"})) }()
		if tok := h.next(); tok != "at-1" {
			t.Fatalf("first authenticate: %q", tok)
		}
		// at-1 expires at the host (the client's clock says it has an hour
		// left): sent again, refused, refreshed, and at-2 is sent.
		h.mu.Lock()
		delete(h.accept, "at-1")
		h.mu.Unlock()
		h.push("expired")
		if a, b := h.next(), h.next(); a != "at-1" || b != "at-2" {
			t.Fatalf("authenticate after expired: %q then %q, want at-1 then the refreshed at-2", a, b)
		}
		// "required" (AHP sends revoked as required): a forced refresh, refused.
		fx.mu.Lock()
		fx.refreshError = "invalid_grant"
		fx.mu.Unlock()
		h.push("required")
		var code int
		select {
		case code = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the watch did not end; stderr:\n%s", r.err.String())
		}
		want := fx.expand(`✓ ` + testResource + `: accepted as alice (agent:use)
! ` + testResource + `: expired
✓ ` + testResource + `: re-authenticated as alice (agent:use)
X ` + testResource + `: required
X ` + testResource + `: cannot refresh the token for ` + testResource + `: cannot refresh the token: the grant is no longer valid; log in again: invalid_grant
agentauth: cannot authenticate ` + testResource + ` again with {TARGET}
To log in, run: agentauth login {TARGET}
`)
		if code != ExitAuth || r.err.String() != want {
			t.Errorf("exit %d, want 4; stderr:\n%s\nwant:\n%s", code, r.err.String(), want)
		}
	})
	t.Run("call refreshes after invalid_token and calls again", func(t *testing.T) {
		fx, h := publishedFixture(t, "at-1", "at-2")
		fx.next = []string{"at-2"}
		h.refuseWhoami = 1
		code, stdout, stderr := fx.run("", "call", "--dialect", "published", "--json", "{TARGET}", "whoami")
		if code != 0 || !strings.Contains(stdout, `"subject":"alice"`) {
			t.Fatalf("exit %d; stdout %s; stderr:\n%s", code, stdout, stderr)
		}
		if a, b := h.next(), h.next(); a != "at-1" || b != "at-2" {
			t.Errorf("the host received %q then %q, want at-1 then the refreshed at-2", a, b)
		}
		if len(fx.refreshForms) != 1 {
			t.Errorf("%d refreshes, want 1", len(fx.refreshForms))
		}
	})
}
