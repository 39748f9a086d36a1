package flows

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

func TestAuthorizationCodeSuccess(t *testing.T) {
	tests := []struct {
		name         string
		resource     string
		host         string
		client       Client
		grantedScope string
		wantScopes   []string
	}{
		{"public client, resource as given, granted scope omitted",
			"http://127.0.0.1:7777/mcp", "", Client{ID: "pub"}, "", []string{"agent:use", "extra"}},
		{"confidential basic client, no resource, localhost callback, granted scope narrower",
			"", "localhost", Client{ID: "conf id", Secret: "s3cr&t"}, "agent:use", []string{"agent:use"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.grantedScope = tt.grantedScope
			b := &browser{}
			var shown string
			tok, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{
				Metadata: &as.md, Client: tt.client, Scopes: []string{"agent:use", "extra"},
				Resource: tt.resource, CallbackHost: tt.host,
				ShowURL: func(u string) { shown = u }, OpenURL: b.open,
			})
			if err != nil {
				t.Fatalf("AuthorizationCode: %v", err)
			}
			if tok.AccessToken != "at-secret-1" || tok.RefreshToken != "rt-secret-1" || tok.TokenType != "Bearer" || tok.Expiry.IsZero() {
				t.Errorf("token = %+v", *tok)
			}
			if strings.Join(tok.Scopes, " ") != strings.Join(tt.wantScopes, " ") {
				t.Errorf("scopes = %q, want %q", tok.Scopes, tt.wantScopes)
			}
			if strings.Contains(tok.String(), "secret") {
				t.Errorf("Token.String() shows a secret: %s", tok)
			}
			if b.status != http.StatusOK || !strings.Contains(b.page, "Logged in") {
				t.Errorf("browser page: %d %q", b.status, b.page)
			}

			q := as.authorizeQ
			wantHost := "127.0.0.1"
			if tt.host != "" {
				wantHost = tt.host
			}
			ru, _ := url.Parse(q.Get("redirect_uri"))
			if ru.Scheme != "http" || ru.Hostname() != wantHost || ru.Port() == "" || ru.Path != "/callback" {
				t.Errorf("redirect_uri = %q, want http://%s:PORT/callback", q.Get("redirect_uri"), wantHost)
			}
			if shown == "" || redirectURIOf(t, shown) != q.Get("redirect_uri") {
				t.Errorf("ShowURL got %q", shown)
			}
			if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
				len(q.Get("state")) < 20 || q.Get("client_id") != tt.client.ID || q.Get("scope") != "agent:use extra" {
				t.Errorf("authorization request = %v", q)
			}
			form := as.tokenForms[0]
			for _, v := range []url.Values{q, form} {
				if _, has := v["resource"]; has != (tt.resource != "") || v.Get("resource") != tt.resource {
					t.Errorf("resource = %q (present %v), want exactly %q", v.Get("resource"), has, tt.resource)
				}
			}
			if tt.client.Secret != "" {
				user, pass, ok := (&http.Request{Header: http.Header{"Authorization": {as.tokenAuth[0]}}}).BasicAuth()
				if !ok || user != url.QueryEscape(tt.client.ID) || pass != url.QueryEscape(tt.client.Secret) || form.Has("client_secret") {
					t.Errorf("client_secret_basic: user %q pass %q, form %v", user, pass, form)
				}
			} else if as.tokenAuth[0] != "" || form.Get("client_id") != tt.client.ID || form.Has("client_secret") {
				t.Errorf("public client: Authorization %q, form %v", as.tokenAuth[0], form)
			}
			assertClosed(t, q.Get("redirect_uri"))
		})
	}
}

// assertClosed fails when the loopback callback still accepts connections.
func assertClosed(t *testing.T, redirectURI string) {
	t.Helper()
	u, err := url.Parse(redirectURI)
	if err != nil || u.Port() == "" {
		t.Fatalf("no port in redirect URI %q", redirectURI)
	}
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", u.Port()))
	if err == nil {
		c.Close()
		t.Errorf("the callback listener on port %s is still open", u.Port())
	}
}

func TestAuthorizationCodeIgnoresWrongState(t *testing.T) {
	as := newFakeAS(t)
	var forged *http.Response
	b := &browser{before: func(authURL string) {
		cb := redirectURIOf(t, authURL) + "?" + url.Values{"code": {"attacker-code"}, "state": {"wrong"}}.Encode()
		resp, err := http.Get(cb)
		if err != nil {
			t.Errorf("forged callback: %v", err)
			return
		}
		resp.Body.Close()
		forged = resp
	}}
	tok, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"}, OpenURL: b.open})
	if err != nil {
		t.Fatalf("AuthorizationCode: %v", err)
	}
	if forged == nil || forged.StatusCode != http.StatusBadRequest {
		t.Fatalf("forged callback answered %v, want 400", forged)
	}
	if tok.AccessToken != "at-secret-1" || len(as.tokenForms) != 1 || as.tokenForms[0].Get("code") != "good-code" {
		t.Fatalf("the forged code was used: token forms %v", as.tokenForms)
	}
}

func TestAuthorizationCodeFailures(t *testing.T) {
	tests := []struct {
		name     string
		issParam bool // metadata advertises RFC 9207
		redirect func(q url.Values)
		wantErr  error
		wantText []string
	}{
		{"error callback", false, func(q url.Values) {
			q.Del("code")
			q.Set("error", "access_denied")
			q.Set("error_description", "The user said <script>no</script>")
		}, ErrAuthorizationRefused, []string{"access_denied", "The user said <script>no</script>"}},
		{"iss mismatch", true, func(q url.Values) { q.Set("iss", "https://evil.example") },
			ErrResponseIssuer, []string{"https://evil.example"}},
		{"iss mismatch, not advertised", false, func(q url.Values) { q.Set("iss", "https://evil.example") },
			ErrResponseIssuer, []string{"https://evil.example"}},
		{"iss missing though advertised", true, nil, ErrResponseIssuer, []string{"RFC 9207"}},
		{"no code", false, func(q url.Values) { q.Del("code") }, nil, []string{"no code"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.md.AuthorizationResponseIssParameterSupported = tt.issParam
			as.redirect = tt.redirect
			b := &browser{}
			// The callback's checks: the probe, which would see the
			// error first, is TestAuthorizationCodePreflight's.
			_, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"}, OpenURL: b.open, NoPreflight: true})
			if err == nil {
				t.Fatal("AuthorizationCode succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %q is not %q", err, tt.wantErr)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			noSecrets(t, err)
			if len(as.tokenForms) != 0 {
				t.Errorf("the code was exchanged after a rejected response")
			}
			if b.status != http.StatusBadRequest || !strings.Contains(b.page, "Login failed") || strings.Contains(b.page, "<script>") {
				t.Errorf("browser page (%d) is not an escaped failure page: %q", b.status, b.page)
			}
			assertClosed(t, as.authorizeQ.Get("redirect_uri"))
		})
	}
	t.Run("error callback carries the OAuth error", func(t *testing.T) {
		as := newFakeAS(t)
		as.redirect = func(q url.Values) { q.Del("code"); q.Set("error", "invalid_scope") }
		_, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"}, OpenURL: (&browser{}).open, NoPreflight: true})
		var oe *wire.OAuthError
		if !errors.As(err, &oe) || oe.Code != "invalid_scope" {
			t.Fatalf("error %v does not carry invalid_scope", err)
		}
	})
	t.Run("exchange refused", func(t *testing.T) {
		as := newFakeAS(t)
		as.token = func(w http.ResponseWriter, form url.Values) { oauthErr(w, 401, "invalid_client", "unknown client") }
		_, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "stale"}, OpenURL: (&browser{}).open, NoPreflight: true})
		if !errors.Is(err, ErrInvalidClient) {
			t.Fatalf("error %v is not ErrInvalidClient", err)
		}
		noSecrets(t, err)
	})
}

func TestAuthorizationCodePortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	as := newFakeAS(t)
	opened := false
	_, err = AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"},
		CallbackPort: port, OpenURL: func(string) error { opened = true; return nil }})
	if !errors.Is(err, ErrCallbackPortInUse) || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("error %v: want ErrCallbackPortInUse naming port %d", err, port)
	}
	if opened {
		t.Fatal("the browser was opened although the callback could not listen")
	}
}

func TestAuthorizationCodePinnedPort(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	as := newFakeAS(t)
	if _, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"},
		CallbackPort: port, OpenURL: (&browser{}).open}); err != nil {
		t.Fatalf("AuthorizationCode: %v", err)
	}
	if want := "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"; as.authorizeQ.Get("redirect_uri") != want {
		t.Fatalf("redirect_uri = %q, want %q", as.authorizeQ.Get("redirect_uri"), want)
	}
}

func TestAuthorizationCodeTimeoutAndCancel(t *testing.T) {
	as := newFakeAS(t)
	var shown string
	_, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"},
		Timeout: 20 * time.Millisecond, ShowURL: func(u string) { shown = u }})
	if !errors.Is(err, ErrLoginTimeout) {
		t.Fatalf("error %v is not ErrLoginTimeout", err)
	}
	assertClosed(t, redirectURIOf(t, shown))

	ctx, cancel := context.WithCancel(context.Background())
	_, err = AuthorizationCode(ctx, nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"},
		ShowURL: func(u string) { shown = u; cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v is not context.Canceled", err)
	}
	assertClosed(t, redirectURIOf(t, shown))
}

func TestAuthorizationCodeBrowserFailure(t *testing.T) {
	as := newFakeAS(t)
	boom := errors.New("no browser here")
	_, err := AuthorizationCode(context.Background(), nil, AuthCodeRequest{Metadata: &as.md, Client: Client{ID: "pub"},
		OpenURL: func(string) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("without ShowURL, an OpenURL failure must end the flow: %v", err)
	}
}

func TestAuthorizationCodeRefusesBadRequests(t *testing.T) {
	as := newFakeAS(t)
	bad := as.md
	bad.AuthorizationEndpoint = "javascript:alert(1)"
	insecure := as.md
	insecure.TokenEndpoint = "http://as.example/token"
	tests := []struct {
		name string
		req  AuthCodeRequest
		want error
	}{
		{"javascript authorization endpoint", AuthCodeRequest{Metadata: &bad, Client: Client{ID: "pub"}}, ErrUnsupportedScheme},
		{"http token endpoint off loopback", AuthCodeRequest{Metadata: &insecure, Client: Client{ID: "pub"}}, ErrInsecureHTTP},
	}
	for _, tt := range tests {
		if _, err := AuthorizationCode(context.Background(), nil, tt.req); !errors.Is(err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.want)
		}
	}
	for _, req := range []AuthCodeRequest{
		{Metadata: &as.md},
		{Metadata: &as.md, Client: Client{ID: "x"}, CallbackHost: "0.0.0.0"},
		{Client: Client{ID: "x"}},
	} {
		if _, err := AuthorizationCode(context.Background(), nil, req); err == nil {
			t.Errorf("AuthorizationCode(%+v) succeeded", req)
		}
	}
}
