package flows

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/wire"
)

func TestRefresh(t *testing.T) {
	tests := []struct {
		name        string
		reply       func(w http.ResponseWriter)
		wantRefresh string
		wantScopes  string
		wantErr     error
	}{
		{"rotated", func(w http.ResponseWriter) {
			writeJSON(w, 200, map[string]any{"access_token": "at-2", "token_type": "bearer", "expires_in": "120", "refresh_token": "rt-2", "scope": "agent:use"})
		}, "rt-2", "agent:use", nil},
		{"not rotated: the old refresh token is kept", func(w http.ResponseWriter) {
			writeJSON(w, 200, map[string]any{"access_token": "at-2", "token_type": "Bearer", "expires_in": 120})
		}, "rt-old-secret", "agent:use agent:admin", nil},
		{"invalid_grant", func(w http.ResponseWriter) { oauthErr(w, 400, "invalid_grant", "refresh token revoked") },
			"", "", ErrInvalidGrant},
		{"invalid_client", func(w http.ResponseWriter) { oauthErr(w, 401, "invalid_client", "client unknown") },
			"", "", ErrInvalidClient},
		{"an error in a 200", func(w http.ResponseWriter) { oauthErr(w, 200, "invalid_grant", "") },
			"", "", ErrInvalidGrant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.token = func(w http.ResponseWriter, form url.Values) { tt.reply(w) }
			tok, err := Refresh(context.Background(), nil, RefreshRequest{
				TokenEndpoint: as.md.TokenEndpoint, Client: Client{ID: "pub"}, RefreshToken: "rt-old-secret",
				Resource: "https://mcp.example/mcp", Scopes: []string{"agent:use", "agent:admin"},
			})
			f := as.tokenForms[0]
			if f.Get("grant_type") != "refresh_token" || f.Get("refresh_token") != "rt-old-secret" ||
				f.Get("resource") != "https://mcp.example/mcp" || f.Get("client_id") != "pub" || f.Has("scope") {
				t.Errorf("refresh request = %v", f)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v is not %v", err, tt.wantErr)
				}
				var oe *wire.OAuthError
				if !errors.As(err, &oe) {
					t.Errorf("error %v does not carry the OAuth error", err)
				}
				noSecrets(t, err, "rt-old-secret")
				return
			}
			if err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if tok.AccessToken != "at-2" || tok.RefreshToken != tt.wantRefresh || strings.Join(tok.Scopes, " ") != tt.wantScopes {
				t.Errorf("token = %+v", *tok)
			}
			if until := time.Until(tok.Expiry); until < time.Minute || until > 2*time.Minute {
				t.Errorf("expiry in %v, want about 120s", until)
			}
		})
	}
	if _, err := Refresh(context.Background(), nil, RefreshRequest{TokenEndpoint: "https://as.example/token", Client: Client{ID: "x"}}); !errors.Is(err, ErrInvalidGrant) {
		t.Errorf("refresh without a refresh token: %v, want ErrInvalidGrant", err)
	}
}

// Client authentication on the token endpoint, per method.
func TestClientAuthentication(t *testing.T) {
	tests := []struct {
		client             Client
		wantUser, wantPass string // Basic credentials, form-urlencoded (RFC 6749 §2.3.1)
		wantForm           url.Values
	}{
		{Client{ID: "my client", Secret: "s&c:r+t%"}, "my+client", "s%26c%3Ar%2Bt%25", url.Values{}},
		{Client{ID: "c", Secret: "s", AuthMethod: AuthMethodClientSecretBasic}, "c", "s", url.Values{}},
		{Client{ID: "c", Secret: "s", AuthMethod: AuthMethodClientSecretPost}, "", "", url.Values{"client_id": {"c"}, "client_secret": {"s"}}},
		{Client{ID: "c"}, "", "", url.Values{"client_id": {"c"}}},
		{Client{ID: "c", Secret: "ignored", AuthMethod: AuthMethodNone}, "", "", url.Values{"client_id": {"c"}}},
	}
	for _, tt := range tests {
		var gotUser, gotPass string
		var gotForm url.Values
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gotUser, gotPass, _ = r.BasicAuth()
			body, _ := io.ReadAll(r.Body)
			gotForm, _ = url.ParseQuery(string(body))
			writeJSON(w, 200, map[string]any{"access_token": "at"})
		}))
		_, err := Refresh(context.Background(), nil, RefreshRequest{TokenEndpoint: srv.URL, Client: tt.client, RefreshToken: "rt"})
		srv.Close()
		if err != nil {
			t.Errorf("%+v: %v", tt.client, err)
			continue
		}
		gotForm.Del("grant_type")
		gotForm.Del("refresh_token")
		if gotUser != tt.wantUser || gotPass != tt.wantPass || gotForm.Encode() != tt.wantForm.Encode() {
			t.Errorf("%s: basic %q:%q form %v; want %q:%q %v", tt.client.method(), gotUser, gotPass, gotForm, tt.wantUser, tt.wantPass, tt.wantForm)
		}
	}
	for _, c := range []Client{{}, {ID: "c", AuthMethod: AuthMethodClientSecretPost}, {ID: "c", Secret: "s", AuthMethod: "private_key_jwt"}} {
		if _, err := Refresh(context.Background(), nil, RefreshRequest{TokenEndpoint: "https://as.example/token", Client: c, RefreshToken: "rt"}); err == nil {
			t.Errorf("client %+v was accepted", c)
		}
	}
}

func TestRevoke(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantErr  bool
		wantCode string
	}{
		{"ok", 200, "", false, ""},
		{"unavailable", 503, "", true, ""},
		{"server error", 500, "oops", true, ""},
		{"unsupported token type", 400, `{"error":"unsupported_token_type"}`, true, "unsupported_token_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var form url.Values
			var auth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				form, _ = url.ParseQuery(string(body))
				auth = r.Header.Get("Authorization")
				if tt.body != "" {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			err := Revoke(context.Background(), nil, RevokeRequest{Endpoint: srv.URL, Client: Client{ID: "c", Secret: "s"},
				Token: "rt-secret-1", TokenTypeHint: HintRefreshToken})
			if form.Get("token") != "rt-secret-1" || form.Get("token_type_hint") != "refresh_token" || !strings.HasPrefix(auth, "Basic ") {
				t.Errorf("revocation request: form %v, Authorization %q", form, auth)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("Revoke: %v, want error %v", err, tt.wantErr)
			}
			noSecrets(t, err)
			if tt.wantCode != "" {
				var oe *wire.OAuthError
				if !errors.As(err, &oe) || oe.Code != tt.wantCode {
					t.Errorf("error %v does not carry %s", err, tt.wantCode)
				}
			}
			var se *HTTPStatusError
			if tt.status >= 500 && (!errors.As(err, &se) || se.StatusCode != tt.status) {
				t.Errorf("error %v does not carry HTTP %d", err, tt.status)
			}
		})
	}
	t.Run("network", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		if err := Revoke(context.Background(), nil, RevokeRequest{Endpoint: srv.URL, Client: Client{ID: "c"}, Token: "tok"}); err == nil {
			t.Fatal("Revoke against a closed server succeeded")
		}
	})
	if err := Revoke(context.Background(), nil, RevokeRequest{Endpoint: "http://as.example/revoke", Client: Client{ID: "c"}, Token: "t"}); !errors.Is(err, ErrInsecureHTTP) {
		t.Errorf("revocation over http off loopback: %v", err)
	}
}

func TestOAuthError(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		want        *wire.OAuthError
		wantStatus  bool
	}{
		{"json", "application/json", `{"error":"invalid_request","error_description":"bad","error_uri":"https://as.example/e"}`,
			&wire.OAuthError{Code: "invalid_request", Description: "bad", URI: "https://as.example/e"}, false},
		{"json without a content type", "", `{"error":"invalid_grant"}`, &wire.OAuthError{Code: "invalid_grant"}, false},
		{"form", "application/x-www-form-urlencoded", `error=slow_down&error_description=wait`,
			&wire.OAuthError{Code: "slow_down", Description: "wait"}, false},
		{"control characters", "application/json", `{"error":"invalid_request","error_description":"a\u001b[31mred\nline"}`,
			&wire.OAuthError{Code: "invalid_request", Description: "a [31mred line"}, false},
		{"html", "text/html", `<h1>Bad Gateway</h1>`, nil, true},
		{"empty", "application/json", ``, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "https://as.example/token", nil)
			resp := &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {tt.contentType}}, Request: req}
			err := oauthError(resp, []byte(tt.body))
			var oe *wire.OAuthError
			var se *HTTPStatusError
			switch {
			case tt.wantStatus:
				if !errors.As(err, &se) || se.StatusCode != 400 || se.URL != "https://as.example/token" {
					t.Fatalf("oauthError = %v, want an HTTPStatusError", err)
				}
			case !errors.As(err, &oe) || *oe != *tt.want:
				t.Fatalf("oauthError = %#v, want %#v", err, tt.want)
			}
		})
	}
}

// grants runs each way of getting a token against as, returning what it got.
var grants = []struct {
	name string
	run  func(as *fakeAS) (*Token, error)
}{
	{"authorization code", func(as *fakeAS) (*Token, error) {
		return AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"}, OpenURL: (&browser{}).open})
	}},
	{"device code", func(as *fakeAS) (*Token, error) {
		as.deviceInterval = 1 // x/oauth2 polls in whole seconds
		return DeviceCode(context.Background(), nil, DeviceRequest{Metadata: &as.md, Client: Client{ID: "pub"},
			ShowCode: func(DeviceCodePrompt) {}})
	}},
	{"refresh", func(as *fakeAS) (*Token, error) {
		return Refresh(context.Background(), nil, RefreshRequest{TokenEndpoint: as.md.TokenEndpoint, Client: Client{ID: "pub"}, RefreshToken: "rt-old"})
	}},
}

// Every grant checks its token response the same way (RFC 6749 §5.1,
// §7.1): token_type Bearer in any case (or absent), expires_in a positive
// number of seconds, capped at MaxTokenLifetime.
func TestTokenResponseChecks(t *testing.T) {
	tests := []struct {
		name, fields string
		wantLifetime time.Duration // when no error
		wantErr      string
	}{
		{"1e12 seconds is capped", `"token_type":"Bearer","expires_in":1e12`, MaxTokenLifetime, ""},
		{"10^12 written out is capped", `"token_type":"Bearer","expires_in":1000000000000`, MaxTokenLifetime, ""},
		{"beyond float64 is capped", `"token_type":"Bearer","expires_in":1e400`, MaxTokenLifetime, ""},
		{"a string and fractions", `"token_type":"Bearer","expires_in":"90.5"`, 90500 * time.Millisecond, ""},
		{"lower-case bearer", `"token_type":"bearer","expires_in":60`, time.Minute, ""},
		{"no token_type, no expires_in", ``, 0, ""},
		{"negative", `"token_type":"Bearer","expires_in":-5`, 0, `expires_in "-5" is not a positive number of seconds (RFC 6749 §5.1)`},
		{"zero", `"token_type":"Bearer","expires_in":0`, 0, `expires_in "0" is not a positive number of seconds`},
		{"minus infinity", `"token_type":"Bearer","expires_in":-1e400`, 0, `expires_in "-1e400" is not a positive number of seconds`},
		{"mac", `"token_type":"mac","expires_in":60`, 0, `token_type "mac" is not Bearer, the only type agentauth can send (RFC 6750)`},
		{"DPoP", `"token_type":"DPoP","expires_in":60`, 0, `token_type "DPoP" is not Bearer`},
		{"a control character", `"token_type":"x\u001b[2J"`, 0, `token_type "x\x1b[2J" is not Bearer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // the device grant waits a second
			body := `{"access_token":"at-secret-1","refresh_token":"rt-secret-1"`
			if tt.fields != "" {
				body += "," + tt.fields
			}
			body += "}"
			var first string
			for _, g := range grants {
				as := newFakeAS(t)
				as.token = func(w http.ResponseWriter, _ url.Values) {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, body)
				}
				before := time.Now()
				tok, err := g.run(as)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("%s: error %v, want %q", g.name, err, tt.wantErr)
					}
					noSecrets(t, err)
					_, msg, _ := strings.Cut(err.Error(), "/token is invalid: ")
					if first == "" {
						first = msg
					} else if msg != first {
						t.Errorf("%s: %q differs from the first grant's %q", g.name, msg, first)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", g.name, err)
				}
				if tok.TokenType != "Bearer" {
					t.Errorf("%s: token type %q, want Bearer", g.name, tok.TokenType)
				}
				if tt.wantLifetime == 0 {
					if !tok.Expiry.IsZero() {
						t.Errorf("%s: expiry %v, want none", g.name, tok.Expiry)
					}
					continue
				}
				if lo, hi := before.Add(tt.wantLifetime), time.Now().Add(tt.wantLifetime); tok.Expiry.Before(lo) || tok.Expiry.After(hi) {
					t.Errorf("%s: expiry %v, want %v from now", g.name, tok.Expiry, tt.wantLifetime)
				}
			}
		})
	}
}

// An absurd device code lifetime or polling interval does not overflow
// into the past (which would end the login at once) nor stop the ticker.
func TestDeviceAbsurdNumbers(t *testing.T) {
	start := time.Now()
	for _, tt := range []struct {
		name        string
		given, want oauth2.DeviceAuthResponse
	}{
		{"huge interval", oauth2.DeviceAuthResponse{Interval: math.MaxInt64}, oauth2.DeviceAuthResponse{Interval: int64(MaxTokenLifetime / time.Second)}},
		{"negative interval", oauth2.DeviceAuthResponse{Interval: -2}, oauth2.DeviceAuthResponse{}},
		{"an expiry that overflowed into the past", oauth2.DeviceAuthResponse{Expiry: start.Add(-time.Hour)}, oauth2.DeviceAuthResponse{Expiry: start.Add(MaxTokenLifetime)}},
		{"a sane one is kept", oauth2.DeviceAuthResponse{Interval: 5, Expiry: start.Add(time.Minute)}, oauth2.DeviceAuthResponse{Interval: 5, Expiry: start.Add(time.Minute)}},
	} {
		got := tt.given
		saneDeviceAuth(&got, start)
		if got.Interval != tt.want.Interval || !got.Expiry.Equal(tt.want.Expiry) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestFormErrorDetail: an error body that is not RFC 6749 JSON is quoted,
// printable and clipped, an RFC 9457 problem by its title and detail, and
// never with a value the request sent.
func TestFormErrorDetail(t *testing.T) {
	code := "code-0123456789abcdef"
	tests := []struct{ name, contentType, body, want string }{
		{"problem+json", "application/problem+json",
			`{"type":"about:blank","title":"Bad Request","status":400,"detail":"redirect_uri does not match"}`,
			"HTTP 400 Bad Request from https://as.example/token: Bad Request: redirect_uri does not match"},
		{"text with escapes", "text/plain", "no\x1b[31m such\n\nclient", "HTTP 400 Bad Request from https://as.example/token: no [31m such client"},
		{"an echoed code", "text/html", "<p>bad code " + code + "</p>", "HTTP 400 Bad Request from https://as.example/token: <p>bad code [redacted]</p>"},
		{"long", "text/plain", strings.Repeat("x", 500), "HTTP 400 Bad Request from https://as.example/token: " + strings.Repeat("x", 200) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "https://as.example/token", nil)
			resp := &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {tt.contentType}}, Request: req}
			err := formError(resp, []byte(tt.body), Client{ID: "c"}, url.Values{"code": {code}, "grant_type": {"authorization_code"}})
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
		})
	}
}
