package flows

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// TestTokenExchange: the RFC 8693 request names the subject token, its
// type, the ID-JAG asked for, the audience and the resource; an answer of
// another token type is refused.
func TestTokenExchange(t *testing.T) {
	issued := TokenTypeIDJAG
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f := r.PostForm
		if f.Get("grant_type") != GrantTokenExchange || f.Get("subject_token") != "id.token" || f.Get("subject_token_type") != TokenTypeIDToken ||
			f.Get("requested_token_type") != TokenTypeIDJAG || f.Get("audience") != "https://as.example" || f.Get("resource") != "https://mcp.example/mcp" || f.Get("client_id") != "idp-client" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_request"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"the.id.jag","issued_token_type":"` + issued + `","token_type":"N_A"}`))
	}))
	defer srv.Close()
	req := TokenExchangeRequest{TokenEndpoint: srv.URL, Client: Client{ID: "idp-client"}, SubjectToken: "id.token", SubjectTokenType: TokenTypeIDToken,
		RequestedTokenType: TokenTypeIDJAG, Audience: "https://as.example", Resource: "https://mcp.example/mcp"}
	jag, err := TokenExchange(context.Background(), srv.Client(), req)
	if err != nil || jag != "the.id.jag" {
		t.Fatalf("TokenExchange = %q, %v", jag, err)
	}
	issued = "urn:ietf:params:oauth:token-type:access_token"
	if _, err := TokenExchange(context.Background(), srv.Client(), req); err == nil || !strings.Contains(err.Error(), "not the") {
		t.Errorf("another token type: err %v", err)
	}
}

// TestExchangeTokenAccessToken: an access token asked for comes back with
// its lifetime and scopes, checked as any token response (Bearer, a
// positive expires_in); the server's refusal wraps its *wire.OAuthError
// and names the party, never the subject token.
func TestExchangeTokenAccessToken(t *testing.T) {
	answer := `{"access_token":"backend.token","issued_token_type":"` + TokenTypeAccessToken + `","token_type":"Bearer","expires_in":300,"scope":"mcp:tools"}`
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if id, secret, ok := r.BasicAuth(); !ok || id != "gw" || secret != "s3cret" || r.PostForm.Get("subject_token_type") != TokenTypeAccessToken ||
			r.PostForm.Get("resource") != "https://backend.example/mcp" || r.PostForm.Get("scope") != "mcp:tools" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_request"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	req := TokenExchangeRequest{TokenEndpoint: srv.URL, Client: Client{ID: "gw", Secret: "s3cret"}, SubjectToken: "caller.secret.token",
		SubjectTokenType: TokenTypeAccessToken, RequestedTokenType: TokenTypeAccessToken, Resource: "https://backend.example/mcp",
		Scopes: []string{"mcp:tools"}, Party: "the authorization server"}
	tok, err := ExchangeToken(context.Background(), srv.Client(), req)
	if err != nil || tok.AccessToken != "backend.token" || tok.TokenType != "Bearer" || time.Until(tok.Expiry) < 290*time.Second ||
		time.Until(tok.Expiry) > 300*time.Second || strings.Join(tok.Scopes, " ") != "mcp:tools" {
		t.Fatalf("ExchangeToken = %+v, %v", tok, err)
	}
	answer = `{"access_token":"backend.token","issued_token_type":"` + TokenTypeAccessToken + `","token_type":"Bearer","expires_in":-1}`
	if _, err := ExchangeToken(context.Background(), srv.Client(), req); err == nil || !strings.Contains(err.Error(), "expires_in") {
		t.Errorf("a negative expires_in: %v", err)
	}
	status, answer = http.StatusBadRequest, `{"error":"invalid_grant","error_description":"subject token revoked"}`
	_, err = ExchangeToken(context.Background(), srv.Client(), req)
	var oe *wire.OAuthError
	if !errors.As(err, &oe) || oe.Code != "invalid_grant" || !strings.Contains(err.Error(), "cannot exchange the token at the authorization server") ||
		strings.Contains(err.Error(), "caller.secret.token") {
		t.Errorf("refused: %v", err)
	}
}
