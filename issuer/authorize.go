package issuer

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// authRequest is a validated authorization request (RFC 6749 §4.1.1).
type authRequest struct {
	client        *client
	redirectURI   string
	redirectGiven bool
	state         string
	scope         string
	resource      string
	challenge     string
}

// consentRecord is a rendered consent or device page awaiting its answer,
// keyed by the hash of the page's single-use nonce.
type consentRecord struct {
	Expires   time.Time   `json:"expires"`
	Auth      *authRecord `json:"auth,omitempty"`       // from /authorize
	DeviceKey string      `json:"device_key,omitempty"` // from /device
	// Subject is who the page was shown to, signed in at the login
	// provider; only they may answer it. Empty with the development box.
	Subject string `json:"subject,omitempty"`
}

// authRecord is an authRequest as a consent page keeps it.
type authRecord struct {
	ClientID      string `json:"client_id"`
	RedirectURI   string `json:"redirect_uri"`
	RedirectGiven bool   `json:"redirect_given"`
	State         string `json:"state,omitempty"`
	Scope         string `json:"scope"`
	Resource      string `json:"resource"`
	Challenge     string `json:"challenge"`
}

func (r *authRequest) record() *authRecord {
	return &authRecord{ClientID: r.client.id, RedirectURI: r.redirectURI, RedirectGiven: r.redirectGiven, State: r.state,
		Scope: r.scope, Resource: r.resource, Challenge: r.challenge}
}

func (r *authRecord) request(c *client) *authRequest {
	return &authRequest{client: c, redirectURI: r.RedirectURI, redirectGiven: r.RedirectGiven, state: r.State,
		scope: r.Scope, resource: r.Resource, challenge: r.Challenge}
}

// serveAuthorize is the authorization endpoint (RFC 6749 §4.1.1). Errors
// about the client or its redirect URI are shown on a page; every other
// error goes back to the redirect URI (§4.1.2.1).
func (i *Issuer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if len(q["client_id"]) > 1 || len(q["redirect_uri"]) > 1 {
		i.errorPage(w, http.StatusBadRequest, "client_id and redirect_uri must appear once.")
		return
	}
	clientID := q.Get("client_id")
	switch {
	case clientID == "":
		i.errorPage(w, http.StatusBadRequest, "The request has no client_id.")
		return
	case len(clientID) > maxParamBytes || len(q.Get("redirect_uri")) > maxURIBytes:
		i.errorPage(w, http.StatusBadRequest, fmt.Sprintf("The client_id or redirect_uri is too long (over %d or %d bytes).", maxParamBytes, maxURIBytes))
		return
	}
	c, err := i.lookupClient(r.Context(), clientID)
	if err != nil {
		if errors.As(err, new(*cimdError)) {
			i.errorPage(w, http.StatusBadRequest, err.Error()+".")
		} else {
			i.storePage(w, err)
		}
		return
	}
	if c == nil {
		i.errorPage(w, http.StatusBadRequest, "Unknown client "+clientID+".")
		return
	}
	req := &authRequest{client: c, redirectURI: q.Get("redirect_uri"), redirectGiven: q.Has("redirect_uri")}
	if len(q.Get("state")) <= maxStateBytes { // a longer one is refused below, not echoed
		req.state = q.Get("state")
	}
	switch {
	case !req.redirectGiven && len(c.redirectURIs) == 1 && !isLoopbackURI(c.redirectURIs[0]):
		req.redirectURI = c.redirectURIs[0] // RFC 6749 §3.1.2.3
	case !req.redirectGiven:
		i.errorPage(w, http.StatusBadRequest, "The request has no redirect_uri.")
		return
	case !c.matchRedirect(req.redirectURI):
		i.errorPage(w, http.StatusBadRequest, "The redirect_uri "+req.redirectURI+" is not registered for client "+clientID+".")
		return
	}
	if e := i.checkAuthRequest(q, req); e != nil {
		i.redirectBack(w, r, req, url.Values{"error": {e.body.Code}, "error_description": {e.body.Description}})
		return
	}
	subject, signedIn, ok := i.pageUser(w, r)
	if !ok {
		return
	}
	if i.opts.AutoApprove {
		// As whom the development box signed this browser in, else as
		// Options.Subject (pageUser).
		if !signedIn {
			i.setBrowserSession(w, subject)
		}
		i.approveCode(w, r, req, subject)
		return
	}
	var pageSubject string
	if signedIn {
		pageSubject = subject
	}
	nonce := randomToken()
	now := i.clock(r.Context())
	err = i.store.Update(r.Context(), func(tx state.Tx) error {
		if err := i.touchClientTx(tx, c.id, now); err != nil {
			return err
		}
		return addConsentTx(tx, nonce, &consentRecord{Expires: now.Add(consentTTL), Auth: req.record(), Subject: pageSubject})
	})
	if err != nil {
		i.storePage(w, err)
		return
	}
	i.render(w, http.StatusOK, "consent.html", consentPage{
		ClientName:  c.displayName(),
		ClientID:    c.id,
		Unverified:  !i.verified(c),
		Scopes:      i.scopeLines(req.scope),
		Resource:    req.resource,
		RedirectURI: req.redirectURI,
		Subject:     subject,
		SignedIn:    signedIn,
		Nonce:       nonce,
	})
}

// checkAuthRequest validates what may be reported to the redirect URI:
// response type, PKCE (RFC 7636 §4.3, S256 only), scope and resource.
func (i *Issuer) checkAuthRequest(q url.Values, req *authRequest) *oauthError {
	if e := checkRepeats(q); e != nil {
		return e
	}
	if e := checkLengths(q); e != nil {
		return e
	}
	switch rt := q.Get("response_type"); {
	case rt == "":
		return badRequest("invalid_request", "response_type is required")
	case rt != "code":
		return badRequest("unsupported_response_type", "only response_type=code is supported")
	}
	if !req.client.allows(wire.GrantAuthorizationCode) {
		return badRequest("unauthorized_client", "the client may not use the authorization code grant")
	}
	challenge := q.Get("code_challenge")
	if challenge == "" {
		return badRequest("invalid_request", "code_challenge is required (PKCE with S256)")
	}
	if q.Get("code_challenge_method") != "S256" {
		return badRequest("invalid_request", "code_challenge_method must be S256; plain and missing are refused")
	}
	if b, err := base64.RawURLEncoding.DecodeString(challenge); err != nil || len(b) != 32 {
		return badRequest("invalid_request", "code_challenge is not a base64url SHA-256 value")
	}
	req.challenge = challenge
	var e *oauthError
	if req.scope, e = i.requestedScope(q); e != nil {
		return e
	}
	if req.resource, e = i.requestedResource(q); e != nil {
		return e
	}
	return nil
}

// addConsentTx keeps a rendered page's answer under the hash of its
// nonce, evicting the page that expires first when maxPendingConsents are
// kept.
func addConsentTx(tx state.Tx, nonce string, c *consentRecord) error {
	if err := evictFirst(tx, kindConsent, maxPendingConsents); err != nil {
		return err
	}
	return putRecord(tx, kindConsent, hash(nonce), c, c.Expires)
}

// evictFirst makes room for one more record of kind, which may hold max:
// when it is full, the record that expires first is dropped.
func evictFirst(tx state.Tx, kind state.Kind, max int) error {
	n, err := tx.Count(kind, max)
	if err != nil || n < max {
		return err
	}
	return tx.DeleteFirstExpiring(kind)
}

// serveConsent takes the Approve/Deny answer of a consent page.
func (i *Issuer) serveConsent(w http.ResponseWriter, r *http.Request) {
	var req *authRequest
	d, ok := i.takeDecision(w, r, "consent page", "from your application",
		func(c *consentRecord) bool { return c.Auth != nil },
		func(tx state.Tx, c *consentRecord, d decision) error {
			req = nil
			cl, err := i.clientTx(tx, c.Auth.ClientID)
			if err == nil && cl != nil && !d.now.After(c.Expires) {
				req = c.Auth.request(cl)
			}
			return err
		},
		func() bool { return req != nil })
	if !ok {
		return
	}
	if !d.approve {
		i.log.Info("issuer: authorization denied", "client_id", req.client.id)
		i.opts.Telemetry.Audit(ops.EventConsent, "client_id", req.client.id, "sub", d.subject, "scope", req.scope, "decision", "denied", "flow", "code")
		i.redirectBack(w, r, req, url.Values{"error": {"access_denied"}, "error_description": {"the user denied the request"}})
		return
	}
	if i.login == nil {
		i.setBrowserSession(w, d.subject)
	}
	i.approveCode(w, r, req, d.subject)
}

// decision is the answer of a consent or device page.
type decision struct {
	approve bool
	subject string
	now     time.Time
}

// takeDecision reads the Approve/Deny answer of a page (a consent page or
// a device page, what; startAgain says where its flow starts again) and, in
// one transaction, takes the page's single-use record (one that matches)
// and runs apply on it. A page shown to another signed-in user is refused
// (403) and its record kept; an expired, used or unknown one (or one
// found answered: answered false after apply) gets 400. ok is false when
// a page was written.
func (i *Issuer) takeDecision(w http.ResponseWriter, r *http.Request, what, startAgain string,
	matches func(*consentRecord) bool, apply func(state.Tx, *consentRecord, decision) error, answered func() bool) (decision, bool) {
	form, ok := i.readPageForm(w, r)
	if !ok {
		return decision{}, false
	}
	approve, subject, ok := i.readDecision(w, r, form)
	if !ok {
		return decision{}, false
	}
	d := decision{approve: approve, subject: subject, now: i.clock(r.Context())}
	key := hash(form.Get("nonce"))
	found, otherUser := false, false
	err := i.store.Update(r.Context(), func(tx state.Tx) error {
		found, otherUser = false, false
		c, err := getRecord[consentRecord](tx, kindConsent, key)
		if err != nil || c == nil || !matches(c) {
			return err
		}
		if otherUser = c.Subject != subject && approve && i.login != nil; otherUser {
			return nil
		}
		if err := tx.Delete(kindConsent, key); err != nil {
			return err
		}
		found = true
		return apply(tx, c, d)
	})
	switch {
	case err != nil:
		i.storePage(w, err)
	case otherUser:
		i.errorPage(w, http.StatusForbidden, "This "+what+" was shown to another signed-in user. Start again "+startAgain+".")
	case !found || !answered():
		i.errorPage(w, http.StatusBadRequest, "This "+what+" expired or was already answered. Start again "+startAgain+".")
	default:
		return d, true
	}
	return decision{}, false
}

// approveCode issues a single-use code and sends it to the client.
func (i *Issuer) approveCode(w http.ResponseWriter, r *http.Request, req *authRequest, subject string) {
	code := randomToken()
	now := i.clock(r.Context())
	rec := &codeRecord{
		ClientID:      req.client.id,
		RedirectURI:   req.redirectURI,
		RedirectGiven: req.redirectGiven,
		Challenge:     req.challenge,
		Subject:       subject,
		Scope:         req.scope,
		Resource:      req.resource,
		Expires:       now.Add(i.opts.CodeTTL),
	}
	b, err := json.Marshal(rec)
	if err != nil {
		i.storePage(w, err)
		return
	}
	// Codes are kept per client until they expire: one client's burst
	// cannot void another's codes, and at its bound it is refused.
	var full *bounded.FullError
	err = i.store.Update(r.Context(), func(tx state.Tx) error {
		if err := i.touchClientTx(tx, req.client.id, now); err != nil {
			return err
		}
		err := bounded.PutTx(tx, kindCode, i.opts.Limits.Codes, req.client.id, hash(code), b, rec.Expires, now)
		if f, ok := errors.AsType[*bounded.FullError](err); ok {
			full, err = f, nil
		}
		return err
	})
	if err != nil {
		i.storePage(w, err)
		return
	}
	if full != nil {
		i.log.Warn("issuer: authorization code refused, too many pending", "client_id", req.client.id, "err", full)
		i.redirectBack(w, r, req, url.Values{"error": {"temporarily_unavailable"}, "error_description": {
			fmt.Sprintf("the client has %d codes pending already; retry in %s seconds", full.Limit, full.RetrySeconds())}})
		return
	}
	i.log.Info("issuer: authorization code issued", "client_id", req.client.id, "sub", subject, "aud", req.resource)
	i.auditApproval(req.client.id, subject, req.scope, "code")
	i.redirectBack(w, r, req, url.Values{"code": {code}})
}

// redirectBack sends the authorization response to the client's redirect
// URI, keeping its query, echoing state and adding iss (RFC 9207 §2).
func (i *Issuer) redirectBack(w http.ResponseWriter, r *http.Request, req *authRequest, params url.Values) {
	u, _ := url.Parse(req.redirectURI) // checked when registered and matched
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if req.state != "" {
		q.Set("state", req.state)
	}
	q.Set("iss", i.opts.Issuer)
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	status := http.StatusFound
	if r.Method == http.MethodPost {
		status = http.StatusSeeOther
	}
	http.Redirect(w, r, u.String(), status)
}

func isLoopbackURI(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "http" && isLoopback(u.Hostname())
}

// auditApproval writes the audit events of an approved authorization:
// with the development sign-in box (no password), the user's sign-in, and
// the consent. (A sign-in at the login provider is audited when it
// happens, in serveLoginCallback.)
func (i *Issuer) auditApproval(clientID, subject, scope, flow string) {
	if i.login == nil {
		i.opts.Telemetry.Audit(ops.EventLogin, "client_id", clientID, "sub", subject, "method", "dev")
	}
	i.opts.Telemetry.Audit(ops.EventConsent, "client_id", clientID, "sub", subject, "scope", scope, "decision", "approved", "flow", flow)
}
