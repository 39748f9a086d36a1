package flows

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestKnownGitHubHost(t *testing.T) {
	tests := []struct {
		as, want string
		ok       bool
	}{
		{GitHubDotCom, "https://github.com", true},
		{"https://github.com/login/oauth/", "https://github.com", true},
		{"https://octocorp.ghe.com/login/oauth", "https://octocorp.ghe.com", true},
		{"http://github.com/login/oauth", "", false},
		{"https://github.com/", "", false},
		{"https://github.com.evil.example/login/oauth", "", false},
		{"https://ghes.corp.example/login/oauth", "", false}, // by URL only without metadata (IsGitHubIssuerPath)
	}
	for _, tt := range tests {
		got, ok := KnownGitHubHost(tt.as)
		if got != tt.want || ok != tt.ok {
			t.Errorf("KnownGitHubHost(%q) = %q, %v; want %q, %v", tt.as, got, ok, tt.want, tt.ok)
		}
	}
	if !IsGitHubIssuerPath("https://ghes.corp.example/login/oauth") || IsGitHubIssuerPath("https://as.example/oauth") {
		t.Error("IsGitHubIssuerPath")
	}
}

func TestNewGitHubHost(t *testing.T) {
	tests := []struct{ base, device, api string }{
		{"https://github.com", "https://github.com/login/device/code", "https://api.github.com"},
		{"https://octocorp.ghe.com", "https://octocorp.ghe.com/login/device/code", "https://api.octocorp.ghe.com"},
		{"https://ghes.corp.example", "https://ghes.corp.example/login/device/code", "https://ghes.corp.example/api/v3"},
		{"http://127.0.0.1:8080/ignored", "http://127.0.0.1:8080/login/device/code", "http://127.0.0.1:8080/api/v3"},
	}
	for _, tt := range tests {
		h, err := NewGitHubHost(tt.base)
		if err != nil {
			t.Fatalf("NewGitHubHost(%q): %v", tt.base, err)
		}
		if h.Endpoints.DeviceCodeURL != tt.device || h.API != tt.api {
			t.Errorf("NewGitHubHost(%q) = %+v", tt.base, h)
		}
	}
	if _, err := NewGitHubHost("http://ghes.corp.example"); !errors.Is(err, ErrInsecureHTTP) {
		t.Errorf("http to a remote GitHub host: err = %v, want ErrInsecureHTTP", err)
	}
}

// TestGitHubDevice runs GitHub's device flow against a server that answers
// as GitHub does: form-encoded, errors in 200 answers. No secret reaches
// it, the scopes come back comma-separated, /user gives the login.
func TestGitHubDevice(t *testing.T) {
	tests := []struct {
		name    string
		polls   []string // "" is the token
		wantErr error
	}{
		{"pending then approved", []string{"authorization_pending", ""}, nil},
		{"denied", []string{"access_denied"}, ErrAccessDenied},
		{"expired", []string{"expired_token"}, ErrDeviceCodeExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var forms []url.Values
			polls := slices.Clone(tt.polls)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				mu.Lock()
				defer mu.Unlock()
				if _, _, basic := r.BasicAuth(); basic || r.PostForm.Has("client_secret") {
					t.Errorf("%s got a client secret", r.URL.Path)
				}
				forms = append(forms, r.PostForm)
				w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
				switch r.URL.Path {
				case "/login/device/code":
					_, _ = w.Write([]byte("device_code=dc&user_code=ABCD-1234&verification_uri=" + url.QueryEscape("http://"+r.Host+"/login/device") + "&expires_in=900&interval=0"))
				case "/login/oauth/access_token":
					next := polls[0]
					polls = polls[1:]
					if next != "" {
						_, _ = w.Write([]byte("error=" + next + "&error_description=nope"))
						return
					}
					_, _ = w.Write([]byte("access_token=gho_x&token_type=bearer&scope=repo%2Cread%3Aorg"))
				case "/api/v3/user":
					w.Header().Set("Content-Type", "application/json")
					if r.Header.Get("Authorization") != "Bearer gho_x" {
						w.WriteHeader(http.StatusUnauthorized)
						return
					}
					_, _ = w.Write([]byte(`{"login":"octocat"}`))
				}
			}))
			defer srv.Close()
			h, err := NewGitHubHost(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			var shown DeviceCodePrompt
			tok, err := GitHubDevice(context.Background(), nil, h, "Iv1.app", []string{"repo", "read:org"}, func(p DeviceCodePrompt) { shown = p })
			if shown.UserCode != "ABCD-1234" || shown.VerificationURI != srv.URL+"/login/device" {
				t.Errorf("prompt = %+v", shown)
			}
			if f := forms[0]; f.Get("client_id") != "Iv1.app" || f.Get("scope") != "repo read:org" {
				t.Errorf("device code request = %v", f)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tok.AccessToken != "gho_x" || tok.TokenType != "Bearer" || strings.Join(tok.Scopes, " ") != "repo read:org" {
				t.Errorf("token = %+v", tok)
			}
			if strings.Contains(tok.String(), "gho_x") {
				t.Error("Token.String shows the token")
			}
			login, err := GitHubUser(context.Background(), nil, h, tok.AccessToken)
			if err != nil || login != "octocat" {
				t.Errorf("GitHubUser = %q, %v", login, err)
			}
			if _, err := GitHubUser(context.Background(), nil, h, "wrong"); err == nil {
				t.Error("GitHubUser with a wrong token: no error")
			}
		})
	}
}
