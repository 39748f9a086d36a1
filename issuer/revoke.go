package issuer

import (
	"net/http"
)

// serveRevoke is the revocation endpoint (RFC 7009 §2). Both token kinds
// are tried whatever token_type_hint says (§2.1). Revoking a refresh token
// revokes its whole family, access tokens included; an access token is
// revoked by its jti. Unknown tokens get 200 (§2.2).
func (i *Issuer) serveRevoke(w http.ResponseWriter, r *http.Request) {
	form, e := parseForm(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	c, e := i.authenticateClient(r, form)
	if e != nil {
		writeError(w, e)
		return
	}
	token := form.Get("token")
	if token == "" {
		writeError(w, badRequest("invalid_request", "token is required"))
		return
	}
	claims := i.parseAccessToken(token)
	var owner *grant
	var jtis []string
	i.lock()
	if rt := i.refresh[hash(token)]; rt != nil {
		owner = rt.grant
		if owner.client == c {
			jtis = i.revokeGrantLocked(owner)
		}
	} else if a := i.accessRecord(claims); a != nil {
		owner = a.grant
		if owner.client == c && !a.revoked {
			a.revoked = true
			jtis = []string{claims.ID}
		}
	}
	i.mu.Unlock()
	if owner != nil && owner.client != c {
		writeError(w, badRequest("unauthorized_client", "the token was issued to another client"))
		return
	}
	i.notifyRevoked(jtis)
	if owner != nil {
		i.log.Info("issuer: tokens revoked", "client_id", c.id, "access_tokens", len(jtis))
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// accessRecord finds the state of a parsed access token; the lock must be
// held.
func (i *Issuer) accessRecord(c *accessClaims) *accessToken {
	if c == nil {
		return nil
	}
	return i.access[c.ID]
}

// introspection is the RFC 7662 §2.2 response.
type introspection struct {
	Active    bool   `json:"active"`
	Scope     string `json:"scope,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Subject   string `json:"sub,omitempty"`
	Audience  string `json:"aud,omitempty"`
	Issuer    string `json:"iss,omitempty"`
	Expiry    int64  `json:"exp,omitempty"`
	IssuedAt  int64  `json:"iat,omitempty"`
	ID        string `json:"jti,omitempty"`
	TokenType string `json:"token_type,omitempty"`
}

// serveIntrospect is the introspection endpoint (RFC 7662 §2). Only a
// confidential client may call it (§2.1). It answers for access tokens: a
// refresh token, which no resource may accept, reports inactive, as does a
// revoked, expired or foreign token.
func (i *Issuer) serveIntrospect(w http.ResponseWriter, r *http.Request) {
	form, e := parseForm(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	c, e := i.authenticateClient(r, form)
	if e != nil {
		writeError(w, e)
		return
	}
	if c.public() {
		writeError(w, clientError("introspection requires a confidential client", false))
		return
	}
	token := form.Get("token")
	if token == "" {
		writeError(w, badRequest("invalid_request", "token is required"))
		return
	}
	claims := i.parseAccessToken(token)
	resp := introspection{}
	now := i.lock()
	if a := i.accessRecord(claims); a != nil && !a.revoked && now.Unix() < claims.Expiry {
		resp = introspection{
			Active:    true,
			Scope:     claims.Scope,
			ClientID:  claims.ClientID,
			Subject:   claims.Subject,
			Audience:  claims.Audience,
			Issuer:    claims.Issuer,
			Expiry:    claims.Expiry,
			IssuedAt:  claims.IssuedAt,
			ID:        claims.ID,
			TokenType: "Bearer",
		}
	}
	i.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}
