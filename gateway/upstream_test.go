package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/broker"
)

// fakeBroker holds upstream tokens per broker session (subject/client).
type fakeBroker struct {
	mu     sync.Mutex
	tokens map[string]string // session → token
	asked  []string
}

func (b *fakeBroker) Session(subject, clientID string) string { return subject + "/" + clientID }

func (b *fakeBroker) Token(ctx context.Context, sid, upstream string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tokens[sid]; ok {
		return t, nil
	}
	return "", broker.ErrSignInNeeded
}

func (b *fakeBroker) Ask(ctx context.Context, who broker.Principal, upstream string) (*broker.Ask, error) {
	b.mu.Lock()
	b.asked = append(b.asked, b.Session(who.Subject, who.ClientID))
	b.mu.Unlock()
	return &broker.Ask{ElicitationID: "EL1", URL: "http://serve.test/auth/start?id=EL1", Message: "Sign in to Rally",
		Upstream: &broker.Upstream{ID: upstream, Label: "Rally"}, AuthStatus: "http://serve.test/auth-status"}, nil
}

// TestUpstreamToken: the backend gets the caller's own upstream token in
// its configured header (HTTP) or variable (stdio), never another
// session's; a caller not signed in is asked to sign in (-32042) and the
// backend sees nothing; the upstream token is scrubbed from answers.
func TestUpstreamToken(t *testing.T) {
	be, log := httpBackend(t)
	fb := &fakeBroker{tokens: map[string]string{"alice/cli": "upstream-token-of-alice-0001"}}
	stdio := stdioBackend(t)
	stdio.Upstream, stdio.UpstreamEnv = "rally", "RALLY_TOKEN"
	for _, tc := range []struct {
		name string
		b    Backend
	}{
		{"http", Backend{Name: "rally", URL: be.URL, Upstream: "rally", UpstreamHeader: "X-Rally-Token"}},
		{"stdio", stdio},
	} {
		name, b := tc.name, tc.b
		t.Run(name, func(t *testing.T) {
			g, err := New(Options{Backends: []Backend{b}, Broker: fb})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			srv := serveMount(t, g.Mounts()[0])
			alice := connect(t, srv.URL, "tok-writer-0123456789", nil)
			r, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "rally_token"})
			if err != nil || resultText(t, r) != "token [redacted] hash 28" {
				t.Fatalf("alice: %v %v; want her 28-byte token, redacted in the answer", r, err)
			}
			if !log.ran("rally_token:upstream-token-of-alice-0001") && name == "http" {
				t.Error("the backend did not get alice's upstream token")
			}
			bob := connect(t, srv.URL, "tok-bob-000123456789", nil)
			_, err = bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "rally_token"})
			if err == nil || !strings.Contains(err.Error(), "Sign in to Rally: open the URL to sign in") {
				t.Fatalf("bob, not signed in: %v; want the sign-in ask", err)
			}
			log.mu.Lock()
			for _, tl := range log.tools {
				if name == "http" && strings.HasPrefix(tl, "rally_token:") && tl != "rally_token:upstream-token-of-alice-0001" {
					t.Errorf("the backend ran %q before bob signed in", tl)
				}
			}
			log.mu.Unlock()
			fb.mu.Lock()
			fb.tokens["bob/cli"] = "upstream-token-of-bob-000002"
			fb.mu.Unlock()
			r, err = bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "rally_token"})
			if err != nil || resultText(t, r) != "token [redacted] hash 28" {
				t.Fatalf("bob signed in: %v %v", r, err)
			}
			r, err = alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "rally_token"})
			if err != nil || resultText(t, r) != "token [redacted] hash 28" {
				t.Fatalf("alice again: %v %v", r, err)
			}
			fb.mu.Lock()
			delete(fb.tokens, "bob/cli")
			fb.mu.Unlock()
		})
	}
	// Per header: each HTTP call carried its caller's token only.
	log.mu.Lock()
	defer log.mu.Unlock()
	var seen []string
	for _, h := range log.headers {
		if v := h.Get("X-Rally-Token"); v != "" {
			seen = append(seen, v)
		}
	}
	b, _ := json.Marshal(seen)
	if !strings.Contains(string(b), "alice") || !strings.Contains(string(b), "bob") {
		t.Errorf("tokens the HTTP backend got: %s", b)
	}
}

// TestDeleteCarriesCredential: the DELETE that ends a backend session
// (a client closing its session) carries the credential the session's
// requests carried — the caller's upstream token and identity assertion —
// so a backend that wants one on every request does not refuse it.
func TestDeleteCarriesCredential(t *testing.T) {
	be, log := httpBackend(t)
	fb := &fakeBroker{tokens: map[string]string{"alice/cli": "upstream-token-of-alice-0001"}}
	assert := func(ctx context.Context, subject, clientID, audience string, scopes []string) (string, error) {
		return "assertion-for-" + subject, nil
	}
	g, err := New(Options{Backends: []Backend{{Name: "rally", URL: be.URL, Upstream: "rally", UpstreamHeader: "X-Rally-Token", Identity: IdentityAssertion}},
		Broker: fb, Assert: assert})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := serveMount(t, g.Mounts()[0])
	alice := connect(t, srv.URL, "tok-writer-0123456789", nil)
	if _, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "rally_token"}); err != nil {
		t.Fatal(err)
	}
	if err := alice.Close(); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	deletes := 0
	for i, m := range log.methods {
		if m != "DELETE" {
			continue
		}
		deletes++
		h := log.headers[i]
		if h.Get("X-Rally-Token") != "upstream-token-of-alice-0001" || h.Get("Authorization") != "Bearer assertion-for-alice" {
			t.Errorf("the backend's DELETE carried X-Rally-Token %q, Authorization %q; want alice's upstream token and assertion", h.Get("X-Rally-Token"), h.Get("Authorization"))
		}
	}
	if deletes != 1 {
		t.Errorf("the backend got %d DELETE requests; want 1 (the session closed)", deletes)
	}
}

// TestChecksCarryUpstreamToken: the tools/list the gateway sends to learn
// a tool's inputSchema carries the session's upstream token too, so a
// backend that refuses requests without it still gets its arguments
// checked (-32602 from serve, the tool never run).
func TestChecksCarryUpstreamToken(t *testing.T) {
	log := &callLog{}
	s := testServer(log)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Rally-Token") == "" {
			http.Error(w, "no Rally token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer be.Close()
	fb := &fakeBroker{tokens: map[string]string{"alice/cli": "upstream-token-of-alice-0001"}}
	g, err := New(Options{Backends: []Backend{{Name: "rally", URL: be.URL, Upstream: "rally", UpstreamHeader: "X-Rally-Token"}}, Broker: fb})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := serveMount(t, g.Mounts()[0])
	sid := sessionOf(t, srv.URL, "tok-writer-0123456789")
	code, _, body := post(t, srv.URL, "tok-writer-0123456789", sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_story","arguments":{"title":5}}}`)
	if !strings.Contains(body, "-32602") || !strings.Contains(body, "do not match its inputSchema") {
		t.Fatalf("bad arguments: HTTP %d %s; want serve's -32602", code, body)
	}
	if log.ran("create_story") {
		t.Error("the backend ran create_story with bad arguments")
	}
}
