package flows

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestAuthorizationCodePreflight: what the server refuses before any
// sign-in ends the login before the browser is sent, saying why; what it
// does not refuse lets the login go on.
func TestAuthorizationCodePreflight(t *testing.T) {
	htmlPage := func(status int, body string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	tests := []struct {
		name      string
		token     func(w http.ResponseWriter, form url.Values)
		authorize func(as *fakeAS) func(http.ResponseWriter, *http.Request)
		wantErr   []error
		wantText  []string
	}{
		{name: "token endpoint: invalid_client",
			token:    func(w http.ResponseWriter, form url.Values) { oauthErr(w, 401, "invalid_client", "no such client") },
			wantErr:  []error{ErrInvalidClient},
			wantText: []string{"does not know the client pub", "invalid_client", "no such client"}},
		{name: "token endpoint: a bare 401",
			token: func(w http.ResponseWriter, form url.Values) {
				w.WriteHeader(http.StatusUnauthorized)
			},
			wantErr:  []error{ErrInvalidClient},
			wantText: []string{"does not know the client pub", "HTTP 401"}},
		{name: "token endpoint: 404",
			token:    func(w http.ResponseWriter, form url.Values) { http.NotFound(w, nil) },
			wantText: []string{"there is no token endpoint at http://", "HTTP 404"}},
		{name: "authorization endpoint: an error page",
			authorize: func(*fakeAS) func(http.ResponseWriter, *http.Request) {
				return htmlPage(400, "<!doctype html><html><head><title>x</title><style>p{}</style></head><body><h1>Authorization error</h1><p>Unknown client &quot;pub&quot;.</p></body></html>")
			},
			wantErr:  []error{ErrAuthorizationRequestRefused},
			wantText: []string{"HTTP 400", `Authorization error Unknown client "pub".`}},
		{name: "authorization endpoint: 404",
			authorize: func(*fakeAS) func(http.ResponseWriter, *http.Request) { return http.NotFound },
			wantErr:   []error{ErrAuthorizationRequestRefused},
			wantText:  []string{"HTTP 404", "/authorize"}},
		{name: "authorization endpoint: a redirect to its error page",
			authorize: func(as *fakeAS) func(http.ResponseWriter, *http.Request) {
				return func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, as.srv.URL+"/oauth2/fallbacks/error?"+url.Values{"error": {"invalid_request"},
						"error_description": {"The request is missing a required parameter."},
						"error_hint":        {"The 'redirect_uri' parameter does not match any of the OAuth 2.0 Client's pre-registered redirect urls."}}.Encode(), http.StatusFound)
				}
			},
			wantErr:  []error{ErrAuthorizationRequestRefused},
			wantText: []string{"invalid_request", "redirect_uri' parameter does not match"}},
		{name: "authorization endpoint: invalid_client on its error page",
			authorize: func(as *fakeAS) func(http.ResponseWriter, *http.Request) {
				return func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, "/error?error=invalid_client&error_description=Client+authentication+failed", http.StatusSeeOther)
				}
			},
			wantErr:  []error{ErrAuthorizationRequestRefused, ErrInvalidClient},
			wantText: []string{"invalid_client", "Client authentication failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.token = tt.token
			if tt.authorize != nil {
				as.probe = tt.authorize(as)
			}
			b := &browser{}
			shown := false
			start := time.Now()
			_, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"},
				ShowURL: func(string) { shown = true }, OpenURL: b.open, Timeout: time.Minute})
			if err == nil {
				t.Fatal("AuthorizationCode succeeded")
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the refusal took %s", d)
			}
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("error %q is not %q", err, want)
				}
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "<") {
				t.Errorf("error %q quotes markup", err)
			}
			if shown || b.status != 0 {
				t.Errorf("the URL was shown (%v) or the browser sent (%d) after a refusal", shown, b.status)
			}
			if len(as.tokenForms) != 0 {
				t.Errorf("a code was exchanged: %v", as.tokenForms)
			}
			noSecrets(t, err)
		})
	}
}

// TestAuthorizationCodePreflightGoesOn: answers that refuse nothing (a
// login page, a redirect to one, a gateway's 403, a server error, no
// answer, a page about the PKCE challenge the probe left out) let the
// login go on, and the probe's requests are the real ones but for their
// state and PKCE: the authorization request has no challenge (a server
// that requires PKCE refuses it before keeping anything).
func TestAuthorizationCodePreflightGoesOn(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request)
	}{
		{"a login page", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<form>Sign in</form>")) }},
		{"a redirect to a login page", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/login?login_challenge=abc", http.StatusFound)
		}},
		{"a gateway's 403", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "checking your browser", http.StatusForbidden)
		}},
		{"a server error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "oops", http.StatusInternalServerError) }},
		{"no answer", func(w http.ResponseWriter, r *http.Request) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		}},
		{"a page about the missing PKCE challenge", func(w http.ResponseWriter, r *http.Request) {
			oauthErr(w, http.StatusBadRequest, "invalid_request", "code_challenge is required")
		}},
		{"an error sent back", func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"error": {"invalid_request"}, "error_description": {"code_challenge is required"}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			var probeQ url.Values
			as.probe = func(w http.ResponseWriter, r *http.Request) {
				probeQ = r.URL.Query()
				tt.answer(w, r)
			}
			tok, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub", Secret: "s3cret-s3cret-s3cret"},
				Resource: "http://127.0.0.1:7777/mcp", OpenURL: (&browser{}).open})
			if err != nil {
				t.Fatalf("AuthorizationCode: %v", err)
			}
			// (A GET whose connection closed is sent again by net/http.)
			if tok.AccessToken != "at-secret-1" || len(as.tokenForms) != 1 || as.authorizations < 2 {
				t.Fatalf("token %v after %d token requests and %d authorization requests", tok, len(as.tokenForms), as.authorizations)
			}
			if len(as.preflightForms) != 1 {
				t.Fatalf("%d token endpoint probes, want 1", len(as.preflightForms))
			}
			pf, real := as.preflightForms[0], as.tokenForms[0]
			if pf.Get("redirect_uri") != real.Get("redirect_uri") || pf.Get("resource") != real.Get("resource") ||
				pf.Get("code_verifier") == "" || pf.Get("code_verifier") == real.Get("code_verifier") {
				t.Errorf("probe form %v against the real one %v", pf, real)
			}
			q := as.authorizeQ
			for _, k := range []string{"client_id", "redirect_uri", "scope", "resource", "response_type"} {
				if probeQ.Get(k) != q.Get(k) {
					t.Errorf("the probe's %s = %q, the browser's %q", k, probeQ.Get(k), q.Get(k))
				}
			}
			if probeQ.Get("state") == q.Get("state") || probeQ.Get("code_challenge_method") != "S256" || probeQ.Get("code_challenge") == "" || probeQ.Get("code_challenge") == q.Get("code_challenge") {
				t.Errorf("the probe reused the login's state or challenge, or sent no S256 challenge of its own: %v", probeQ)
			}
		})
	}
}

// TestProbeKeepsSecrets: a token endpoint that echoes the form does not
// put the client secret in the error.
func TestProbeKeepsSecrets(t *testing.T) {
	as := newFakeAS(t)
	as.token = func(w http.ResponseWriter, form url.Values) {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("no route for " + form.Encode()))
	}
	_, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub", Secret: "s3cret-s3cret-s3cret", AuthMethod: AuthMethodClientSecretPost}, OpenURL: (&browser{}).open})
	if err == nil || strings.Contains(err.Error(), "s3cret-s3cret-s3cret") || strings.Contains(err.Error(), PreflightCodePrefix) {
		t.Fatalf("error %v", err)
	}
	var se *HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != 404 {
		t.Fatalf("error %v is not the 404", err)
	}
}
