package resource

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// tokenVerifier is a Verifier over a fixed set of tokens: what a host's
// VerifyBearer does, without a host.
func tokenVerifier(grants map[string]*Grant) Verifier {
	return func(_ context.Context, token string) (*Grant, *Refusal) {
		if g := grants[token]; g != nil {
			return g, nil
		}
		ch := map[string]string{"error": wire.ErrInvalidToken, "error_description": "The access token is not recognised"}
		if token == "" {
			ch = map[string]string{}
		}
		return nil, &Refusal{Status: http.StatusUnauthorized, Challenge: ch,
			Err: wire.Errorf(wire.CodeAuthRequired, "authentication required")}
	}
}

const (
	protected   = "http://127.0.0.1:7777/mcp"
	metadataURL = "http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp"
)

// serveProtected runs one request through RequireBearerToken and returns
// the recorder and the grant the protected handler saw (nil: not called).
func serveProtected(t *testing.T, mw func(http.Handler) http.Handler, r *http.Request) (*httptest.ResponseRecorder, *Grant) {
	t.Helper()
	var seen *Grant
	called := false
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called = true
		seen = GrantFromContext(r.Context())
		w.WriteHeader(http.StatusNoContent)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if called && seen == nil {
		t.Fatal("the protected handler ran without a grant in its context")
	}
	return rec, seen
}

func jsonPost(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, protected, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", token)
	}
	return r
}

// RequireBearerToken: the grant reaches the handler; every refusal is the
// RFC 6750 status with a challenge naming resource_metadata (RFC 9728
// §5.1) and a JSON-RPC error body, and the handler does not run.
func TestRequireBearerToken(t *testing.T) {
	alice := &Grant{Subject: "alice", Scopes: []string{"agent:use"}}
	mw := RequireBearerToken(tokenVerifier(map[string]*Grant{"t-alice": alice}),
		&BearerOptions{ResourceMetadataURL: metadataURL, Resource: protected, Scopes: []string{"agent:use"}})

	rec, g := serveProtected(t, mw, jsonPost("Bearer t-alice"))
	if rec.Code != http.StatusNoContent || g != alice {
		t.Fatalf("accepted token: %d, grant %+v", rec.Code, g)
	}
	if GrantFromContext(context.Background()) != nil {
		t.Error("GrantFromContext of a context without a grant is not nil")
	}
	get := httptest.NewRequest(http.MethodGet, protected, nil)
	get.Header.Set("Authorization", "bearer t-alice") // the scheme is case-insensitive (RFC 7235 §2.1)
	if rec, g := serveProtected(t, mw, get); rec.Code != http.StatusNoContent || g != alice {
		t.Errorf("GET (no body to check): %d, grant %+v", rec.Code, g)
	}

	form := httptest.NewRequest(http.MethodPost, protected, strings.NewReader("access_token=t-alice"))
	form.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	twice := jsonPost("Bearer t-alice")
	twice.Header.Add("Authorization", "Bearer t-alice")
	for _, c := range []struct {
		name   string
		r      *http.Request
		status int
		header string // a substring of WWW-Authenticate; "" for none
	}{
		{"no token", jsonPost(""), 401, `Bearer resource_metadata="` + metadataURL + `"`},
		{"another scheme is no token", jsonPost("Basic dXNlcjpwdw=="), 401, `Bearer resource_metadata=`},
		{"rejected token", jsonPost("Bearer t-mallory"), 401, `error="invalid_token"`},
		{"malformed header", jsonPost("Bearer a b"), 400, `error="invalid_request"`},
		{"two Authorization headers", twice, 400, `error="invalid_request"`},
		{"token in the query", httptest.NewRequest(http.MethodGet, protected+"?access_token=t-alice", nil), 400, `error="invalid_request"`},
		{"token in a form body", form, 400, `error="invalid_request"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, g := serveProtected(t, mw, c.r)
			if g != nil || rec.Code != c.status {
				t.Fatalf("status %d (grant %+v), want %d", rec.Code, g, c.status)
			}
			if got := rec.Header().Get("WWW-Authenticate"); !strings.Contains(got, c.header) || !strings.Contains(got, "resource_metadata=") {
				t.Errorf("WWW-Authenticate %q, want it to contain %q and resource_metadata", got, c.header)
			}
			var m wire.Message
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m.Error == nil {
				t.Errorf("body %q, want a JSON-RPC error", rec.Body)
			}
		})
	}

	// A grant without the resource's scopes: 403 insufficient_scope.
	mw = RequireBearerToken(tokenVerifier(map[string]*Grant{"t-bob": {Subject: "bob"}}),
		&BearerOptions{ResourceMetadataURL: metadataURL, Resource: protected, Scopes: []string{"agent:use"}})
	rec, g = serveProtected(t, mw, jsonPost("Bearer t-bob"))
	if ch := rec.Header().Get("WWW-Authenticate"); rec.Code != http.StatusForbidden || g != nil ||
		!strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, `scope="agent:use"`) {
		t.Errorf("missing scope: %d %q, want 403 insufficient_scope", rec.Code, ch)
	}
}

// The DPoP rules of RFC 9449 §7.1 for a token bound to a key (cnf.jkt):
// it needs the DPoP scheme and exactly one proof, by that key, for this
// request's method and URI and this token, fresh and never seen before.
func TestDPoPProofRules(t *testing.T) {
	key, _, err := wire.NewDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := wire.NewDPoPKey()
	now := time.Unix(1_800_000_000, 0)
	bound := &Grant{Subject: "alice", JKT: key.Thumbprint()}
	mw := RequireBearerToken(tokenVerifier(map[string]*Grant{"t-bound": bound}),
		&BearerOptions{ResourceMetadataURL: metadataURL, Resource: protected, Now: func() time.Time { return now }})
	proof := func(k *wire.DPoPKey, method, target, token string, at time.Time) string {
		p, err := k.Proof(method, target, token, "", at)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	with := func(scheme string, proofs ...string) *http.Request {
		r := jsonPost(scheme + " t-bound")
		for _, p := range proofs {
			r.Header.Add(wire.HeaderDPoP, p)
		}
		return r
	}
	good := proof(key, http.MethodPost, protected, "t-bound", now)
	if rec, g := serveProtected(t, mw, with("DPoP", good)); rec.Code != http.StatusNoContent || g != bound {
		t.Fatalf("a valid proof: %d %s", rec.Code, rec.Body)
	}
	for _, c := range []struct {
		name string
		r    *http.Request
		desc string
	}{
		{"replayed proof", with("DPoP", good), "already used"},
		{"Bearer scheme for a bound token", with("Bearer", proof(key, http.MethodPost, protected, "t-bound", now)), "DPoP-bound"},
		{"no proof", with("DPoP"), "exactly one DPoP proof"},
		{"two proofs", with("DPoP", proof(key, http.MethodPost, protected, "t-bound", now), proof(key, http.MethodPost, protected, "t-bound", now)), "exactly one DPoP proof"},
		{"another key", with("DPoP", proof(other, http.MethodPost, protected, "t-bound", now)), "not made with the key"},
		{"another method", with("DPoP", proof(key, http.MethodGet, protected, "t-bound", now)), ""},
		{"another URI", with("DPoP", proof(key, http.MethodPost, "http://127.0.0.1:7777/other", "t-bound", now)), ""},
		{"another token", with("DPoP", proof(key, http.MethodPost, protected, "t-other", now)), ""},
		{"too old", with("DPoP", proof(key, http.MethodPost, protected, "t-bound", now.Add(-DPoPWindow-time.Second))), ""},
		{"from the future", with("DPoP", proof(key, http.MethodPost, protected, "t-bound", now.Add(DPoPWindow+time.Second))), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, g := serveProtected(t, mw, c.r)
			ch := rec.Header().Get("WWW-Authenticate")
			if rec.Code != http.StatusUnauthorized || g != nil || !strings.HasPrefix(ch, "DPoP ") || !strings.Contains(ch, `error="invalid_dpop_proof"`) {
				t.Fatalf("%d %q, want 401 with a DPoP invalid_dpop_proof challenge", rec.Code, ch)
			}
			if !strings.Contains(ch, c.desc) {
				t.Errorf("challenge %q does not say %q", ch, c.desc)
			}
		})
	}
	// An unbound token needs no proof, with either scheme.
	mw = RequireBearerToken(tokenVerifier(map[string]*Grant{"t-bound": {Subject: "bob"}}), &BearerOptions{Resource: protected})
	if rec, _ := serveProtected(t, mw, with("Bearer")); rec.Code != http.StatusNoContent {
		t.Errorf("an unbound token: %d %s", rec.Code, rec.Body)
	}
}

// 1,000 concurrent first uses of one token validate it once (single
// flight) and all get its grant; a later use is a cache hit.
func TestThousandConcurrentFirstUsesValidateOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		var calls atomic.Int32
		release := make(chan struct{})
		v := validatorFunc(func(ctx context.Context, token string) (*Grant, error) {
			calls.Add(1)
			<-release
			return &Grant{Subject: "alice", Expiry: time.Now().Add(time.Hour)}, nil
		})
		c := NewChecker("dev", v, 0, time.Now, nil)
		grants := make(chan *Grant, n)
		for range n {
			go func() {
				g, err := c.Check(context.Background(), "tok", false)
				if err != nil {
					t.Error(err)
				}
				grants <- g
			}()
		}
		synctest.Wait() // all 1,000 are blocked: one in the validator, the others waiting for it
		if got := calls.Load(); got != 1 {
			t.Errorf("%d concurrent first uses of one token started %d validations, want 1", n, got)
		}
		close(release)
		for range n {
			if g := <-grants; g == nil || g.Subject != "alice" || g.Scheme != "dev" {
				t.Fatalf("grant %+v, want alice's", g)
			}
		}
		if _, err := c.Check(context.Background(), "tok", false); err != nil || calls.Load() != 1 {
			t.Errorf("a later use: %v, %d validations; want a cache hit", err, calls.Load())
		}
	})
}

type validatorFunc func(ctx context.Context, token string) (*Grant, error)

func (f validatorFunc) Validate(ctx context.Context, token string) (*Grant, error) {
	return f(ctx, token)
}
