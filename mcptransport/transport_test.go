package mcptransport_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/agentauthtest"
	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/mcptransport"
	"github.com/agentauth/agentauth/store"
)

// syncBuffer is Output, written by concurrent requests.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTransport(t *testing.T, srv *agentauthtest.Server, st store.Store) (*mcptransport.Transport, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	tr, err := mcptransport.New(mcptransport.Options{Store: st, Browser: srv.Browser(""), Output: out})
	if err != nil {
		t.Fatal(err)
	}
	return tr, out
}

func whoami(t *testing.T, url string, tr http.RoundTripper) (string, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcptransport-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// A Go SDK client over the transport logs in on the first 401, stores
// the credential and uses it for the next session without a login.
func TestLoginThenStored(t *testing.T) {
	srv := agentauthtest.NewServer(t)
	st := store.NewMemory()
	tr, out := newTransport(t, srv, st)
	text, err := whoami(t, srv.URL, tr)
	if err != nil || !strings.Contains(text, `"subject":"alice"`) {
		t.Fatalf("whoami: %q, %v", text, err)
	}
	if n := strings.Count(out.String(), "Logged in"); n != 1 {
		t.Fatalf("%d logins, want 1:\n%s", n, out)
	}
	creds, _ := st.List(context.Background())
	if len(creds) != 1 || creds[0].Resource != srv.URL {
		t.Fatalf("stored %v; want one credential for %s", creds, srv.URL)
	}
	// A new transport over the same store: no login.
	tr2, out2 := newTransport(t, srv, st)
	if _, err := whoami(t, srv.URL, tr2); err != nil {
		t.Fatal(err)
	}
	if out2.String() != "" {
		t.Fatalf("the stored credential was not used:\n%s", out2)
	}
}

// A 403 insufficient_scope steps up: one more login, for the held scopes
// and the challenge's, and the call succeeds with both.
func TestStepUp(t *testing.T) {
	srv := agentauthtest.NewServer(t, agentauthtest.WithToolScope("whoami", "admin"))
	tr, out := newTransport(t, srv, store.NewMemory())
	text, err := whoami(t, srv.URL, tr)
	if err != nil || !strings.Contains(text, `"scopes":["agent:use","admin"]`) {
		t.Fatalf("whoami: %q, %v\n%s", text, err, out)
	}
	if !strings.Contains(out.String(), "tools/call needs more scope (HTTP 403 insufficient_scope); logging in again for agent:use admin") {
		t.Fatalf("no step-up:\n%s", out)
	}
}

// A token the server stops accepting (its grant revoked at the issuer,
// RFC 7009) is refreshed, and when the refresh is refused too, replaced
// by a login: the call succeeds.
func TestRevokedLogsInAgain(t *testing.T) {
	srv := agentauthtest.NewServer(t)
	st := store.NewMemory()
	tr, out := newTransport(t, srv, st)
	if _, err := whoami(t, srv.URL, tr); err != nil {
		t.Fatal(err)
	}
	creds, _ := st.List(context.Background())
	c := creds[0]
	if err := flows.Revoke(context.Background(), http.DefaultClient, flows.RevokeRequest{Endpoint: c.RevocationEndpoint,
		Client: flows.Client{ID: c.Client.ClientID, AuthMethod: flows.AuthMethodNone}, Token: c.RefreshToken, TokenTypeHint: flows.HintRefreshToken}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, srv.URL, tr); err != nil {
		t.Fatalf("after the revocation: %v\n%s", err, out)
	}
	if n := strings.Count(out.String(), "Logged in"); n != 2 {
		t.Fatalf("%d logins, want 2:\n%s", n, out)
	}
}

// The stored token goes to its resource's origin only: a server on
// another origin that the credential names as its target (as if it had
// claimed to serve that resource) gets no token, and the transport says
// why.
func TestNoTokenToAnotherOrigin(t *testing.T) {
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusOK)
	}))
	defer other.Close()
	st := store.NewMemory()
	resource := "http://127.0.0.1:1/mcp"
	if err := st.Put(context.Background(), &store.Credential{Key: store.Key{Resource: resource, Issuer: "http://127.0.0.1:1"},
		Target: other.URL + "/mcp", AccessToken: "secret-token", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	tr, err := mcptransport.New(mcptransport.Options{Store: st, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(other.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(got) != 1 || got[0] != "" {
		t.Fatalf("another origin received %q", got)
	}
	if !strings.Contains(out.String(), "agentauth does not send a token issued for one server to another") || strings.Contains(out.String(), "secret-token") {
		t.Fatalf("output:\n%s", out)
	}
}

// The transport's bounds refuse new work: a body over MaxBody is not
// sent, and a target beyond MaxTargets fails while the known ones go on.
func TestBounds(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	tr, err := mcptransport.New(mcptransport.Options{Store: store.NewMemory(), Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr}
	if _, err := hc.Post(srv.URL+"/mcp", "application/json", strings.NewReader(strings.Repeat(" ", mcptransport.MaxBody+1))); err == nil || hits.Load() != 0 {
		t.Fatalf("a body over MaxBody: %v, %d requests sent", err, hits.Load())
	}
	for i := range mcptransport.MaxTargets {
		resp, err := hc.Get(fmt.Sprintf("%s/mcp/%d?q=1", srv.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if _, err := hc.Get(srv.URL + "/mcp/one-more"); err == nil || !strings.Contains(err.Error(), "already serves 64 MCP servers") {
		t.Fatalf("one target too many: %v", err)
	}
	resp, err := hc.Get(srv.URL + "/mcp/0?q=2")
	if err != nil {
		t.Fatalf("a known target after the bound: %v", err)
	}
	resp.Body.Close()
}

// With NoLogin, a server the store holds no credential for answers 401
// and the transport returns that answer at once: no login starts (no
// authorization URL shown, nothing stored). Once agentauth logged in
// (here a transport that may), the same NoLogin transport uses the
// stored credential.
func TestNoLogin(t *testing.T) {
	srv := agentauthtest.NewServer(t)
	st := store.NewMemory()
	out := &syncBuffer{}
	tr, err := mcptransport.New(mcptransport.Options{Store: st, Browser: srv.Browser(""), Output: out, NoLogin: true})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("NoLogin: %v; want the server's 401", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("NoLogin: %d %q; want the server's 401 and its challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if creds, _ := st.List(context.Background()); len(creds) != 0 || out.String() != "" {
		t.Fatalf("NoLogin logged in: %d credentials stored, output %q", len(creds), out)
	}

	may, _ := newTransport(t, srv, st)
	if _, err := whoami(t, srv.URL, may); err != nil {
		t.Fatal(err)
	}
	text, err := whoami(t, srv.URL, tr)
	if err != nil || !strings.Contains(text, `"subject":"alice"`) || out.String() != "" {
		t.Fatalf("NoLogin with a stored credential: %q, %v, output %q", text, err, out)
	}
}
