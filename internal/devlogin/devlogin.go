// Package devlogin signs in to an auto-approving embedded issuer (serve
// --auto-approve, or issuer.Options.AutoApprove) without a browser, for
// benchmarks and tests: the binary never imports it.
package devlogin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/wire"
)

// Token runs the authorization code grant with PKCE (RFC 6749 §4.1, RFC
// 7636) as the CLI client against the issuer at origin, whose auto-approved
// /authorize redirects at once, and returns the access token. resource,
// when set, is sent as RFC 8707's resource; with key the token is bound to
// it (RFC 9449 §5), after the DPoP-Nonce round trip. hc's own redirect
// policy is not used: the redirect to the callback is read, not followed.
func Token(hc *http.Client, origin, resource string, key *wire.DPoPKey) (string, error) {
	access, _, err := Login(hc, origin, resource, key)
	return access, err
}

// Login is Token, returning the refresh token too.
func Login(hc *http.Client, origin, resource string, key *wire.DPoPKey) (access, refresh string, err error) {
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	form, err := code(&noRedirect, origin, resource)
	if err != nil {
		return "", "", err
	}
	nonce := ""
	for range 2 {
		req, err := http.NewRequest(http.MethodPost, origin+"/token", strings.NewReader(form.Encode()))
		if err != nil {
			return "", "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if key != nil {
			proof, err := key.Proof(http.MethodPost, origin+"/token", "", nonce, time.Now())
			if err != nil {
				return "", "", err
			}
			req.Header.Set("DPoP", proof)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			return "", "", err
		}
		var tok struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
		err = json.NewDecoder(resp.Body).Decode(&tok)
		resp.Body.Close()
		if tok.AccessToken != "" {
			return tok.AccessToken, tok.RefreshToken, nil
		}
		if nonce = resp.Header.Get("DPoP-Nonce"); key == nil || nonce == "" || err != nil {
			return "", "", fmt.Errorf("no token: %s %v", resp.Status, err)
		}
	}
	return "", "", fmt.Errorf("no token after the DPoP nonce round trip")
}

// Code runs the auto-approved authorization request and returns the form
// that redeems its code at /token. hc must not follow redirects.
func Code(hc *http.Client, origin string) (url.Values, error) { return code(hc, origin, "") }

func code(noRedirect *http.Client, origin, resource string) (url.Values, error) {
	verifier := oauth2.GenerateVerifier()
	redirect := "http://127.0.0.1:1/callback"
	q := url.Values{"response_type": {"code"}, "client_id": {issuer.CLIClientID}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	if resource != "" {
		q.Set("resource", resource)
	}
	resp, err := noRedirect.Get(origin + "/authorize?" + q.Encode())
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return nil, fmt.Errorf("no code from /authorize: %s %q", resp.Status, resp.Header.Get("Location"))
	}
	return url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirect},
		"client_id": {issuer.CLIClientID}, "code_verifier": {verifier}}, nil
}
