package flows

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestExchangeCode(t *testing.T) {
	for _, tc := range []struct {
		name, verifier string
		auth           string
	}{
		{"pkce, basic", "v-123", AuthMethodClientSecretBasic},
		{"no pkce, post", "", AuthMethodClientSecretPost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var form url.Values
			var basic bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.ParseForm()
				form = r.PostForm
				_, _, basic = r.BasicAuth()
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"access_token":"at","token_type":"Bearer","expires_in":60,"refresh_token":"rt"}`))
			}))
			defer srv.Close()
			tok, err := ExchangeCode(context.Background(), srv.Client(), CodeExchange{TokenEndpoint: srv.URL + "/token",
				Client: Client{ID: "serve", Secret: "s", AuthMethod: tc.auth}, Code: "c", RedirectURI: "http://127.0.0.1:1/callback", Verifier: tc.verifier})
			if err != nil || tok.AccessToken != "at" || tok.RefreshToken != "rt" {
				t.Fatalf("ExchangeCode: %v, %v", tok, err)
			}
			if form.Get("grant_type") != "authorization_code" || form.Get("code") != "c" || form.Get("redirect_uri") != "http://127.0.0.1:1/callback" {
				t.Fatalf("form %v", form)
			}
			if form.Has("code_verifier") != (tc.verifier != "") || form.Get("code_verifier") != tc.verifier {
				t.Fatalf("code_verifier %q, want %q", form.Get("code_verifier"), tc.verifier)
			}
			if basic != (tc.auth == AuthMethodClientSecretBasic) || (form.Get("client_secret") == "s") != (tc.auth == AuthMethodClientSecretPost) {
				t.Fatalf("client authentication: basic %v, form secret %q", basic, form.Get("client_secret"))
			}
		})
	}
}
