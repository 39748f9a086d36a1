package issuer

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// clientTokenRequest reads a client's request about one token, as the
// revocation and introspection endpoints take it (RFC 7009 §2.1, RFC 7662
// §2.1): the client authenticated, and the required token parameter.
func (i *Issuer) clientTokenRequest(w http.ResponseWriter, r *http.Request) (*client, string, *oauthError) {
	form, e := parseForm(w, r)
	if e != nil {
		return nil, "", e
	}
	c, e := i.authenticateClient(r, form)
	if e != nil {
		return nil, "", e
	}
	token := form.Get("token")
	if token == "" {
		return nil, "", badRequest("invalid_request", "token is required")
	}
	return c, token, nil
}

// serveRevoke is the revocation endpoint (RFC 7009 §2). Both token kinds
// are tried whatever token_type_hint says (§2.1). Revoking a refresh token
// revokes its whole family, access tokens included; an access token is
// revoked by its jti. Unknown tokens get 200 (§2.2).
func (i *Issuer) serveRevoke(w http.ResponseWriter, r *http.Request) {
	c, token, e := i.clientTokenRequest(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	ctx := r.Context()
	claims := i.parseAccessToken(ctx, token)
	now := i.clock(ctx)
	var owner string // the client the token was issued to
	var jtis []string
	var ended *grantRecord // the client's last live family, revoked
	err := i.store.Update(ctx, func(tx state.Tx) error {
		owner, jtis, ended = "", nil, nil
		rt, err := getRecord[refreshRecord](tx, kindRefresh, refreshKey(token))
		if err != nil {
			return err
		}
		if rt != nil {
			g, err := getRecord[grantRecord](tx, kindGrant, rt.GrantID)
			if err != nil || g == nil {
				return err
			}
			if owner = g.ClientID; owner != c.id || g.Revoked {
				return nil
			}
			if jtis, err = i.revokeGrantTx(tx, now, rt.GrantID, g); err != nil {
				return err
			}
			last, err := lastGrantTx(tx, now, rt.GrantID, g)
			if last {
				ended = g
			}
			return err
		}
		if claims == nil {
			return nil
		}
		if owner = claims.ClientID; owner == c.id {
			revoked, err := i.revokeAccessTx(tx, claims.ID, time.Unix(claims.Expiry, 0))
			if revoked {
				jtis = []string{claims.ID}
			}
			return err
		}
		return nil
	})
	if err != nil {
		writeError(w, i.storeFailed(err))
		return
	}
	if owner != "" && owner != c.id {
		writeError(w, badRequest("unauthorized_client", "the token was issued to another client"))
		return
	}
	i.notifyRevoked(ctx, jtis)
	if owner != "" {
		i.log.Info("issuer: tokens revoked", "client_id", c.id, "access_tokens", len(jtis))
		i.opts.Telemetry.Audit(ops.EventTokenRevoked, "client_id", c.id, "revoked", len(jtis))
	}
	i.endSession(ended)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// endSession tells the OnSessionEnd callbacks that the client of g is
// signed out of its subject's session; g nil ends nothing.
func (i *Issuer) endSession(g *grantRecord) {
	if g == nil {
		return
	}
	i.mu.Lock()
	fns := slices.Clone(i.onEnd)
	i.mu.Unlock()
	for _, fn := range fns {
		fn(g.Subject, g.ClientID)
	}
}

// lastGrantTx reports whether no family but id (g) of g's subject and
// client is still live: neither revoked nor expired.
func lastGrantTx(tx state.Tx, now time.Time, id string, g *grantRecord) (bool, error) {
	recs, err := tx.List(kindGrant)
	if err != nil {
		return false, err
	}
	for _, r := range recs {
		var o grantRecord
		if r.Key == id || !r.Expires.IsZero() && !now.Before(r.Expires) || json.Unmarshal(r.Value, &o) != nil {
			continue
		}
		if !o.Revoked && o.Subject == g.Subject && o.ClientID == g.ClientID {
			return false, nil
		}
	}
	return true, nil
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
	// Cnf carries a DPoP-bound token's key thumbprint (RFC 9449 §6.2).
	Cnf *confirmation `json:"cnf,omitempty"`
}

// serveIntrospect is the introspection endpoint (RFC 7662 §2). Only a
// confidential client may call it (§2.1). It answers for access tokens: a
// refresh token, which no resource may accept, reports inactive, as does a
// revoked, expired or foreign token.
func (i *Issuer) serveIntrospect(w http.ResponseWriter, r *http.Request) {
	c, token, e := i.clientTokenRequest(w, r)
	if e == nil && c.public() {
		e = clientError("introspection requires a confidential client", false)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	ctx := r.Context()
	claims := i.parseAccessToken(ctx, token)
	resp := introspection{}
	now := i.clock(ctx)
	revoked := false
	if claims != nil && now.Unix() < claims.Expiry {
		err := i.store.View(ctx, func(tx state.Tx) error {
			var err error
			if revoked, err = tx.Revoked(claims.ID, now); revoked || err != nil || claims.Family == "" {
				return err
			}
			revoked, err = tx.Revoked(claims.Family, now)
			return err
		})
		if err != nil {
			writeError(w, i.storeFailed(err))
			return
		}
	}
	if claims != nil && !revoked && now.Unix() < claims.Expiry {
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
			Cnf:       claims.Cnf,
		}
		if claims.Cnf != nil {
			resp.TokenType = wire.TokenTypeDPoP
		}
	}
	writeJSON(w, http.StatusOK, resp)
}
