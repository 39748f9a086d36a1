package issuer

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// tokenResponse is the RFC 6749 §5.1 success response.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
}

// serveToken is the token endpoint (RFC 6749 §3.2). Errors follow §5.2:
// JSON, 400, or 401 for client authentication failures, never cached.
func (i *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	resp, e := i.token(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (i *Issuer) token(w http.ResponseWriter, r *http.Request) (*tokenResponse, *oauthError) {
	form, e := parseForm(w, r)
	if e != nil {
		return nil, e
	}
	grantType := form.Get("grant_type")
	if grantType == "" {
		return nil, badRequest("invalid_request", "grant_type is required")
	}
	c, e := i.authenticateClient(r, form)
	if e != nil {
		return nil, e
	}
	if !slices.Contains(supportedGrants, grantType) {
		return nil, badRequest("unsupported_grant_type", "grant_type "+grantType+" is not supported")
	}
	if !c.allows(grantType) {
		return nil, badRequest("unauthorized_client", "the client may not use grant_type "+grantType)
	}
	var redeem func(time.Time, *client, url.Values) (*tokenResponse, []string, *oauthError)
	switch grantType {
	case wire.GrantAuthorizationCode:
		redeem = i.redeemCodeLocked
	case wire.GrantRefreshToken:
		redeem = i.redeemRefreshLocked
	case wire.GrantDeviceCode:
		redeem = i.redeemDeviceLocked
	}
	now := i.lock()
	resp, revoked, e := redeem(now, c, form)
	i.mu.Unlock()
	i.notifyRevoked(revoked)
	return resp, e
}

// redeemCodeLocked is the authorization code grant (RFC 6749 §4.1.3) with
// the PKCE check (RFC 7636 §4.6). A code is single-use: a replay revokes
// every token issued from it (§4.1.2), and a wrong verifier voids it.
func (i *Issuer) redeemCodeLocked(now time.Time, c *client, form url.Values) (*tokenResponse, []string, *oauthError) {
	code, verifier := form.Get("code"), form.Get("code_verifier")
	if code == "" {
		return nil, nil, badRequest("invalid_request", "code is required")
	}
	if verifier == "" {
		return nil, nil, badRequest("invalid_request", "code_verifier is required (PKCE)")
	}
	key := hash(code)
	if used := i.usedCodes[key]; used != nil {
		if used.grant.client != c {
			return nil, nil, badRequest("invalid_grant", "the authorization code was issued to another client")
		}
		jtis := i.revokeGrantLocked(used.grant)
		i.log.Warn("issuer: authorization code replayed, its tokens are revoked", "client_id", c.id, "revoked", len(jtis))
		return nil, jtis, badRequest("invalid_grant", "the authorization code was already used; every token issued from it is revoked")
	}
	ac := i.codes[key]
	switch {
	case ac == nil:
		return nil, nil, badRequest("invalid_grant", "unknown authorization code")
	case ac.client != c:
		return nil, nil, badRequest("invalid_grant", "the authorization code was issued to another client")
	case now.After(ac.expires):
		delete(i.codes, key)
		return nil, nil, badRequest("invalid_grant", "the authorization code expired")
	case (ac.redirectGiven || form.Has("redirect_uri")) && form.Get("redirect_uri") != ac.redirectURI:
		return nil, nil, badRequest("invalid_grant", "redirect_uri differs from the authorization request")
	case !verifierMatches(verifier, ac.challenge):
		delete(i.codes, key)
		i.log.Warn("issuer: wrong code_verifier, code voided", "client_id", c.id)
		return nil, nil, badRequest("invalid_grant", "code_verifier does not match the code_challenge; the code is void")
	}
	if e := sameResource(form, ac.resource); e != nil {
		return nil, nil, e
	}
	g := &grant{client: c, subject: ac.subject, scope: ac.scope, resource: ac.resource}
	delete(i.codes, key)
	i.usedCodes[key] = &usedCode{grant: g, keepUntil: now.Add(max(i.opts.TokenTTL, i.opts.RefreshTTL))}
	resp, e := i.issueLocked(now, g, g.scope)
	return resp, nil, e
}

// verifierMatches checks an RFC 7636 §4.1 verifier (43 to 128 unreserved
// characters) against an S256 challenge.
func verifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	for _, r := range verifier {
		if !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '.' || r == '_' || r == '~') {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

// redeemRefreshLocked is the refresh grant (RFC 6749 §6). Every use
// rotates the refresh token; presenting a rotated one again revokes the
// whole family (OAuth 2.0 Security BCP, RFC 9700 §4.14.2).
func (i *Issuer) redeemRefreshLocked(now time.Time, c *client, form url.Values) (*tokenResponse, []string, *oauthError) {
	token := form.Get("refresh_token")
	if token == "" {
		return nil, nil, badRequest("invalid_request", "refresh_token is required")
	}
	rt := i.refresh[hash(token)]
	switch {
	case rt == nil:
		return nil, nil, badRequest("invalid_grant", "unknown refresh token")
	case rt.grant.client != c:
		return nil, nil, badRequest("invalid_grant", "the refresh token was issued to another client")
	case rt.grant.revoked:
		return nil, nil, badRequest("invalid_grant", "the refresh token was revoked")
	case rt.used:
		jtis := i.revokeGrantLocked(rt.grant)
		i.log.Warn("issuer: rotated refresh token reused, its family is revoked", "client_id", c.id, "revoked", len(jtis))
		return nil, jtis, badRequest("invalid_grant", "the refresh token was already used; its token family is revoked")
	case now.After(rt.expires):
		return nil, nil, badRequest("invalid_grant", "the refresh token expired")
	}
	scope, e := narrowScope(form, rt.grant.scope)
	if e != nil {
		return nil, nil, e
	}
	if e := sameResource(form, rt.grant.resource); e != nil {
		return nil, nil, e
	}
	rt.used = true
	resp, e := i.issueLocked(now, rt.grant, scope)
	return resp, nil, e
}

// issueLocked signs an access token for g and, when the client may
// refresh, a new refresh token of the same family.
func (i *Issuer) issueLocked(now time.Time, g *grant, scope string) (*tokenResponse, *oauthError) {
	jti := randomID()
	expires := now.Add(i.opts.TokenTTL)
	at, err := i.sign(accessClaims{
		Issuer:   i.opts.Issuer,
		Subject:  g.subject,
		Audience: g.resource,
		Expiry:   expires.Unix(),
		IssuedAt: now.Unix(),
		ID:       jti,
		ClientID: g.client.id,
		Scope:    scope,
	})
	if err != nil {
		i.log.Error("issuer: cannot sign access token", "err", err)
		return nil, &oauthError{status: http.StatusInternalServerError, body: wire.OAuthError{Code: "server_error", Description: "cannot sign the access token"}}
	}
	i.access[jti] = &accessToken{grant: g, expires: expires}
	g.client.issued = true
	g.jtis = append(g.jtis, jti)
	resp := &tokenResponse{AccessToken: at, TokenType: "Bearer", ExpiresIn: int64(i.opts.TokenTTL / time.Second), Scope: scope}
	if g.client.allows(wire.GrantRefreshToken) {
		resp.RefreshToken = randomToken()
		i.refresh[hash(resp.RefreshToken)] = &refreshToken{grant: g, expires: now.Add(i.opts.RefreshTTL)}
	}
	i.log.Info("issuer: access token issued", "client_id", g.client.id, "sub", g.subject, "aud", g.resource, "scope", scope, "jti", jti)
	return resp, nil
}
