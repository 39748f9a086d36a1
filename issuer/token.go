package issuer

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
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

func (i *Issuer) token(w http.ResponseWriter, r *http.Request) (resp *tokenResponse, _ *oauthError) {
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
	var redeem redeemFunc
	switch grantType {
	case wire.GrantAuthorizationCode:
		redeem = i.redeemCodeTx
	case wire.GrantRefreshToken:
		redeem = i.redeemRefreshTx
	case wire.GrantDeviceCode:
		redeem = i.redeemDeviceTx
	case wire.GrantClientCredentials:
		redeem = i.redeemClientCredentialsTx
	case GrantJWTBearer:
		if len(i.opts.AssertionIssuers) == 0 {
			return nil, badRequest("unsupported_grant_type", "this server trusts no assertion issuer: start serve with --trust-assertion-issuer ISSUER=KEYFILE")
		}
		redeem = i.redeemJWTBearerTx
	}
	ctx := r.Context()
	now := i.clock(ctx)
	key, err := i.signer(ctx, now)
	if err != nil {
		return nil, i.storeFailed(err)
	}
	// A grant that keeps no record counts against the client's live
	// tokens (liveTokens), and gives its count back if it issues none.
	if grantType == wire.GrantClientCredentials || grantType == GrantJWTBearer {
		if full := i.live.take(c.id, now); full != nil {
			return nil, limitError(full, "access tokens")
		}
		defer func() {
			if resp == nil {
				i.live.give(c.id, now)
			}
		}()
	}
	dp := &issuing{now: now, key: key}
	if e := i.checkTokenDPoP(r, dp); e != nil {
		return nil, e
	}
	if dp.nonce != "" {
		w.Header().Set(wire.HeaderDPoPNonce, dp.nonce)
	}
	var revoked []string
	var logs []func()
	var ended *grantRecord
	var access *accessClaims
	update := i.store.Update
	if grantType == wire.GrantClientCredentials && (!c.registered || c.issued) {
		// Nothing to write (see liveTokens and issueTx): no transaction.
		update = func(_ context.Context, fn func(state.Tx) error) error { return fn(nil) }
	}
	err = update(ctx, func(tx state.Tx) error {
		is := &issuing{tx: tx, now: now, key: key, jkt: dp.jkt, grantType: grantType}
		var err error
		resp, revoked, e, err = redeem(is, c, form)
		logs, ended, access = is.logs, is.ended, is.access
		return err
	})
	if err != nil {
		return nil, i.storeFailed(err)
	}
	if resp != nil && access != nil {
		if resp.AccessToken, err = jwt.Signed(key.signer).Claims(access).Serialize(); err != nil {
			i.log.Error("issuer: cannot sign access token", "err", err)
			return nil, &oauthError{status: http.StatusInternalServerError, body: wire.OAuthError{Code: "server_error", Description: "cannot sign the access token"}}
		}
	}
	for _, log := range logs {
		log()
	}
	i.notifyRevoked(ctx, revoked)
	i.endSession(ended)
	return resp, e
}

// issuing is what a grant needs to issue tokens: the transaction, the
// time and the signing key (read before the transaction began).
type issuing struct {
	tx  state.Tx
	now time.Time
	key *signingKey
	// noRefresh withholds the refresh token (client credentials, RFC
	// 6749 §4.4.3).
	noRefresh bool
	// jkt is the thumbprint of the request's DPoP key (RFC 9449 §5), and
	// nonce the DPoP-Nonce to send with the answer.
	jkt, nonce string
	// grantType is the request's grant_type, for the metrics and audit.
	grantType string
	// access is the access token's claims, signed with key once the
	// transaction commits.
	access *accessClaims
	// logs are written once the transaction commits: a store may run it
	// again (state.Store.Update), and a rolled-back run did nothing.
	logs []func()
	// ended is the family revoked for reuse or replay when it was the
	// client's last live one for its subject: the session ends
	// (OnSessionEnd) once the transaction commits.
	ended *grantRecord
}

// revokeStolenTx revokes the family id (g) because one of its tokens was
// presented again (a rotated refresh token, a redeemed code): RFC 9700
// §4.14.2, RFC 6749 §4.1.2. It returns the access token jtis revoked and
// records in is.ended whether that left the client no live family for g's
// subject; a family revoked already ends nothing again.
func (i *Issuer) revokeStolenTx(is *issuing, id string, g *grantRecord) ([]string, error) {
	wasRevoked := g.Revoked
	jtis, err := i.revokeGrantTx(is.tx, is.now, id, g)
	if err != nil || wasRevoked {
		return jtis, err
	}
	last, err := lastGrantTx(is.tx, is.now, id, g)
	if last {
		is.ended = g
	}
	return jtis, err
}

// logAfter logs what the transaction did once it commits.
func (is *issuing) logAfter(fn func()) { is.logs = append(is.logs, fn) }

// redeemFunc redeems one grant type inside a transaction: the response or
// its OAuth error, the jtis it revoked, and a state store failure, which
// undoes the transaction. An OAuth error commits what was written (a
// voided code, a revoked family, a slowed-down poll).
type redeemFunc func(is *issuing, c *client, form url.Values) (*tokenResponse, []string, *oauthError, error)

// redeemCodeTx is the authorization code grant (RFC 6749 §4.1.3) with
// the PKCE check (RFC 7636 §4.6). A code is single-use: a replay revokes
// every token issued from it (§4.1.2), and a wrong verifier voids it.
func (i *Issuer) redeemCodeTx(is *issuing, c *client, form url.Values) (*tokenResponse, []string, *oauthError, error) {
	code, verifier := form.Get("code"), form.Get("code_verifier")
	if code == "" {
		return nil, nil, badRequest("invalid_request", "code is required"), nil
	}
	if verifier == "" {
		return nil, nil, badRequest("invalid_request", "code_verifier is required (PKCE)"), nil
	}
	// Codes are kept per client (see approveCode): another client's code
	// is not found, as if unknown.
	tx, now, key, kind := is.tx, is.now, hash(code), bounded.Kind(kindCode, c.id)
	ac, err := getRecord[codeRecord](tx, kind, key)
	if err != nil {
		return nil, nil, nil, err
	}
	if ac == nil {
		return i.replayedCodeTx(is, c, key)
	}
	switch {
	case ac.ClientID != c.id:
		return nil, nil, badRequest("invalid_grant", "the authorization code was issued to another client"), nil
	case now.After(ac.Expires):
		return nil, nil, badRequest("invalid_grant", "the authorization code expired"), tx.Delete(kind, key)
	case (ac.RedirectGiven || form.Has("redirect_uri")) && form.Get("redirect_uri") != ac.RedirectURI:
		return nil, nil, badRequest("invalid_grant", "redirect_uri differs from the authorization request"), nil
	case !verifierMatches(verifier, ac.Challenge):
		is.logAfter(func() { i.log.Warn("issuer: wrong code_verifier, code voided", "client_id", c.id) })
		return nil, nil, badRequest("invalid_grant", "code_verifier does not match the code_challenge; the code is void"), tx.Delete(kind, key)
	}
	if e := sameResource(form, ac.Resource); e != nil {
		return nil, nil, e, nil
	}
	// The family is named by the code's hash: a replay finds it.
	if err := tx.Delete(kind, key); err != nil {
		return nil, nil, nil, err
	}
	g := &grantRecord{ClientID: c.id, Subject: ac.Subject, Scope: ac.Scope, Resource: ac.Resource}
	return i.issueTx(is, c, key, g, g.Scope)
}

// replayedCodeTx answers a code that is not pending: unknown, or
// redeemed already (its family, named by its hash, exists while its
// tokens may live), in which case every token issued from it is revoked
// (RFC 6749 §4.1.2).
func (i *Issuer) replayedCodeTx(is *issuing, c *client, key string) (*tokenResponse, []string, *oauthError, error) {
	tx := is.tx
	g, err := getRecord[grantRecord](tx, kindGrant, key)
	if err != nil {
		return nil, nil, nil, err
	}
	if g != nil {
		if g.ClientID != c.id {
			return nil, nil, badRequest("invalid_grant", "the authorization code was issued to another client"), nil
		}
		jtis, err := i.revokeStolenTx(is, key, g)
		if err != nil {
			return nil, nil, nil, err
		}
		is.logAfter(func() {
			i.log.Warn("issuer: authorization code replayed, its tokens are revoked", "client_id", c.id, "revoked", len(jtis))
		})
		return nil, jtis, badRequest("invalid_grant", "the authorization code was already used; every token issued from it is revoked"), nil
	}
	return nil, nil, badRequest("invalid_grant", "unknown authorization code"), nil
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

// redeemRefreshTx is the refresh grant (RFC 6749 §6). Every use rotates
// the refresh token; presenting a rotated one again revokes the whole
// family (OAuth 2.0 Security BCP, RFC 9700 §4.14.2). The family's record
// names its current refresh token and is read and rewritten in one
// transaction, so that of two concurrent uses (on two replicas, say) one
// rotates and the other is reuse.
func (i *Issuer) redeemRefreshTx(is *issuing, c *client, form url.Values) (*tokenResponse, []string, *oauthError, error) {
	token := form.Get("refresh_token")
	if token == "" {
		return nil, nil, badRequest("invalid_request", "refresh_token is required"), nil
	}
	tx, now, key := is.tx, is.now, refreshKey(token)
	// A refresh token's record never changes once written: it is read
	// without a lock. The family's, read with Get, is what concurrent
	// uses of its tokens serialize on.
	rt, err := peekRecord[refreshRecord](tx, kindRefresh, key)
	if err != nil {
		return nil, nil, nil, err
	}
	var g *grantRecord
	if rt != nil {
		if g, err = getRecord[grantRecord](tx, kindGrant, rt.GrantID); err != nil {
			return nil, nil, nil, err
		}
	}
	switch {
	case rt == nil || g == nil:
		return nil, nil, badRequest("invalid_grant", "unknown refresh token"), nil
	case g.ClientID != c.id:
		return nil, nil, badRequest("invalid_grant", "the refresh token was issued to another client"), nil
	case g.Revoked:
		return nil, nil, badRequest("invalid_grant", "the refresh token was revoked"), nil
	case g.Refresh != key:
		jtis, err := i.revokeStolenTx(is, rt.GrantID, g)
		if err != nil {
			return nil, nil, nil, err
		}
		is.logAfter(func() {
			i.log.Warn("issuer: rotated refresh token reused, its family is revoked", "client_id", c.id, "revoked", len(jtis))
			i.opts.Telemetry.Audit(ops.EventRefreshTokenReused, "client_id", c.id, "revoked", len(jtis))
		})
		return nil, jtis, badRequest("invalid_grant", "the refresh token was already used; its token family is revoked"), nil
	case now.After(rt.Expires):
		return nil, nil, badRequest("invalid_grant", "the refresh token expired"), nil
	}
	scope, e := narrowScope(form, g.Scope)
	if e != nil {
		return nil, nil, e, nil
	}
	if e := sameResource(form, g.Resource); e != nil {
		return nil, nil, e, nil
	}
	return i.issueTx(is, c, rt.GrantID, g, scope)
}

// A refresh token is "<issued>.<secret>": issued is the time it was
// issued, sixteen hexadecimal digits of Unix nanoseconds, and secret
// randomToken's 256 bits. Its record's key is issued, a dot and the
// token's hash (refreshKey). The keys of the refresh tokens issued last,
// the ones clients present, so sort together: SQLite and PostgreSQL add
// and find them in the last pages of their index, however many rotated
// tokens are kept for reuse detection (RFC 9700 §4.14.2). With the bare
// hash as key each refresh wrote a random page of an index that outgrows
// the database's cache. The time adds nothing a client does not know: it
// was given the token then.
const refreshIssuedDigits = 16

// newRefreshToken returns a refresh token issued at now and its record's
// key.
func newRefreshToken(now time.Time) (token, key string) {
	token = fmt.Sprintf("%0*x", refreshIssuedDigits, uint64(now.UnixNano())) + "." + randomToken()
	return token, refreshKey(token)
}

// refreshKey is the record key of a presented refresh token: see
// newRefreshToken. A token of another form (one issued by an earlier
// agentauth, or none of ours) is keyed by its hash alone, as those were.
func refreshKey(token string) string {
	issued, _, ok := strings.Cut(token, ".")
	if !ok || len(issued) != refreshIssuedDigits || strings.Trim(issued, "0123456789abcdef") != "" {
		return hash(token)
	}
	return issued + "." + hash(token)
}

// redeemClientCredentialsTx is the client credentials grant (RFC 6749
// §4.4.2): a confidential client gets a token for itself (its id is the
// subject), for the scope and resource it names (else the defaults),
// without a refresh token (§4.4.3). Each grant is a family of its own.
func (i *Issuer) redeemClientCredentialsTx(is *issuing, c *client, form url.Values) (*tokenResponse, []string, *oauthError, error) {
	if c.public() {
		return nil, nil, badRequest("unauthorized_client", "the client credentials grant needs a confidential client (RFC 6749 §4.4); register one with a client_secret_basic, client_secret_post or private_key_jwt token_endpoint_auth_method"), nil
	}
	scope, e := i.requestedScope(form)
	if e != nil {
		return nil, nil, e, nil
	}
	resource, e := i.requestedResource(form)
	if e != nil {
		return nil, nil, e, nil
	}
	is.noRefresh = true
	g := &grantRecord{ClientID: c.id, Subject: ClientSubject(c.id), Scope: scope, Resource: resource}
	return i.issueTx(is, c, randomID(), g, scope)
}

// ClientSubject is the token subject of a client acting for itself (the
// client credentials grant): "client:" and its id, so that a client named
// alice is not the user alice.
func ClientSubject(clientID string) string { return "client:" + clientID }

// issueTx signs an access token for the family g (id) and, when the client
// may refresh, a new refresh token of the same family. The access token
// carries the family's id (sid), by which the family's revocation
// refuses it: a refresh revokes nothing, and a family keeps no list of
// its access tokens. It returns no revoked ids (the signature of
// redeemFunc).
func (i *Issuer) issueTx(is *issuing, c *client, id string, g *grantRecord, scope string) (*tokenResponse, []string, *oauthError, error) {
	tx, now := is.tx, is.now
	switch {
	case g.JKT != "" && g.JKT != is.jkt:
		return nil, nil, badRequest("invalid_grant", "the grant is bound to a DPoP key: send a DPoP proof made with that key (RFC 9449 §5)"), nil
	case g.JKT == "":
		g.JKT = is.jkt
	}
	var cnf *confirmation
	tokenType := "Bearer"
	if g.JKT != "" {
		cnf, tokenType = &confirmation{JKT: g.JKT}, wire.TokenTypeDPoP
	}
	if g.Family == "" {
		g.Family = randomID()
	}
	jti := randomID()
	expires := now.Add(i.opts.TokenTTL)
	// The token is signed once the transaction commits (issuing.access):
	// signing is the costliest step of a grant and would otherwise hold
	// the store's transaction (SQLite runs one at a time) while it runs.
	is.access = &accessClaims{
		Cnf:      cnf,
		Issuer:   i.opts.Issuer,
		Subject:  g.Subject,
		Audience: g.Resource,
		Expiry:   expires.Unix(),
		IssuedAt: now.Unix(),
		ID:       jti,
		ClientID: c.id,
		Scope:    scope,
		Family:   g.Family,
	}
	// Access tokens issued without a sid (by an earlier agentauth) are
	// forgotten once they expired.
	g.Access = slices.DeleteFunc(g.Access, func(a issuedAccess) bool { return !a.Expires.After(now) })
	resp := &tokenResponse{TokenType: tokenType, ExpiresIn: int64(i.opts.TokenTTL / time.Second), Scope: scope}
	if c.allows(wire.GrantRefreshToken) && !is.noRefresh {
		resp.RefreshToken, g.Refresh = newRefreshToken(now)
		rt := refreshRecord{GrantID: id, Expires: now.Add(i.opts.RefreshTTL)}
		if err := putRecord(tx, kindRefresh, g.Refresh, rt, rt.Expires); err != nil {
			return nil, nil, nil, err
		}
	}
	// A grant without a refresh token keeps no record: see liveTokens.
	if !is.noRefresh {
		if err := putRecord(tx, kindGrant, id, g, i.grantExpiry(now)); err != nil {
			return nil, nil, nil, err
		}
	}
	if c.registered && !c.issued {
		if err := i.issuedClientTx(tx, c.id); err != nil {
			return nil, nil, nil, err
		}
	}
	is.logAfter(func() {
		i.log.Info("issuer: access token issued", "client_id", c.id, "sub", g.Subject, "aud", g.Resource, "scope", scope, "jti", jti)
		i.opts.Telemetry.TokenIssued(is.grantType)
		i.opts.Telemetry.Audit(ops.EventTokenIssued, "client_id", c.id, "sub", g.Subject, "aud", g.Resource, "scope", scope, "grant_type", is.grantType)
	})
	return resp, nil, nil, nil
}
