package flows

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
