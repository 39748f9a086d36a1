package issuer

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// userCodeAlphabet is the base-20 consonant set of RFC 8628 §6.1: no
// vowels (no words), no easily confused characters. A user code is 8 of
// them, shown as XXXX-XXXX (about 34.5 bits).
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

const userCodeLen = 8

// slowDownStep is added to the polling interval on each slow_down
// (RFC 8628 §3.5).
const slowDownStep = 5 * time.Second

type deviceState int

const (
	devicePending deviceState = iota
	deviceApproved
	deviceDenied
)

// User code guessing is limited issuer-wide (RFC 8628 §5.1): the first
// userCodeFreeFailures wrong codes are answered at once; after them a code
// typed sooner than userCodeRetryInterval after the previous wrong one is
// refused unchecked, and counts as wrong; at userCodeMaxFailures the
// device page refuses every code, the right one included, for
// userCodeLockout. The count restarts userCodeFailureWindow after the last
// wrong code. With 20^8 codes this leaves an attacker about
// userCodeMaxFailures guesses per lockout against every pending code.
// The limit is not per address: every caller of a loopback listener comes
// from loopback, and any 127.0.0.0/8 address can be a source.
const (
	userCodeFreeFailures  = 10
	userCodeRetryInterval = 2 * time.Second
	userCodeMaxFailures   = 30
	userCodeLockout       = 5 * time.Minute
	userCodeFailureWindow = 10 * time.Minute
)

// userCodeGuard counts wrong user codes; guarded by Issuer.mu.
type userCodeGuard struct {
	failures    int
	lastFailure time.Time
	lockedUntil time.Time
}

// refuse says why a user code may not be checked now, and for how long,
// or "" when it may. A code refused for coming too soon counts as wrong.
func (g *userCodeGuard) refuse(now time.Time) (string, time.Duration) {
	if now.Before(g.lockedUntil) {
		wait := g.lockedUntil.Sub(now)
		return fmt.Sprintf("Too many wrong codes were entered: the code page is locked for %s. Check the code on your device, then try again.", wait.Round(time.Second)), wait
	}
	if now.Sub(g.lastFailure) > userCodeFailureWindow {
		g.failures = 0
	}
	if g.failures >= userCodeFreeFailures && now.Sub(g.lastFailure) < userCodeRetryInterval {
		g.fail(now)
		return fmt.Sprintf("Too many wrong codes were entered: wait %s between two codes. Check the code on your device.", userCodeRetryInterval), userCodeRetryInterval
	}
	return "", 0
}

// fail counts a wrong code; the last one allowed locks the page.
func (g *userCodeGuard) fail(now time.Time) {
	g.failures++
	g.lastFailure = now
	if g.failures >= userCodeMaxFailures {
		g.failures = 0
		g.lockedUntil = now.Add(userCodeLockout)
	}
}

// deviceAuth is one device authorization (RFC 8628 §3.2).
type deviceAuth struct {
	client   *client
	userCode string // normalised: 8 letters, no dash
	scope    string
	resource string
	expires  time.Time
	interval time.Duration
	lastPoll time.Time
	state    deviceState
	subject  string
}

// deviceAuthResponse is the RFC 8628 §3.2 response.
type deviceAuthResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int64  `json:"interval"`
}

// serveDeviceAuthorization is the device authorization endpoint
// (RFC 8628 §3.1).
func (i *Issuer) serveDeviceAuthorization(w http.ResponseWriter, r *http.Request) {
	resp, e := i.deviceAuthorization(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (i *Issuer) deviceAuthorization(w http.ResponseWriter, r *http.Request) (*deviceAuthResponse, *oauthError) {
	form, e := parseForm(w, r)
	if e != nil {
		return nil, e
	}
	c, e := i.authenticateClient(r, form)
	if e != nil {
		return nil, e
	}
	if !c.allows(wire.GrantDeviceCode) {
		return nil, badRequest("unauthorized_client", "the client may not use the device authorization grant")
	}
	scope, e := i.requestedScope(form)
	if e != nil {
		return nil, e
	}
	resource, e := i.requestedResource(form)
	if e != nil {
		return nil, e
	}
	deviceCode := randomToken()
	now := i.lock()
	if len(i.devices) >= maxDeviceAuthorizations {
		i.pruneDevicesLocked(now, 0)
	}
	if len(i.devices) >= maxDeviceAuthorizations {
		i.mu.Unlock()
		i.log.Warn("issuer: device authorization refused, too many pending", "max", maxDeviceAuthorizations)
		return nil, &oauthError{status: http.StatusServiceUnavailable, body: wire.OAuthError{Code: "temporarily_unavailable", Description: fmt.Sprintf(
			"the issuer already holds %d pending device authorizations; try again when some are answered or expired (%s)", maxDeviceAuthorizations, i.opts.DeviceCodeTTL)}}
	}
	userCode := newUserCode()
	for i.userCodes[userCode] != nil {
		userCode = newUserCode()
	}
	d := &deviceAuth{
		client:   c,
		userCode: userCode,
		scope:    scope,
		resource: resource,
		expires:  now.Add(i.opts.DeviceCodeTTL),
		interval: i.opts.DeviceInterval,
	}
	i.devices[hash(deviceCode)] = d
	i.userCodes[userCode] = d
	i.mu.Unlock()
	i.log.Info("issuer: device authorization started", "client_id", c.id, "aud", resource)
	shown := formatUserCode(userCode)
	return &deviceAuthResponse{
		DeviceCode:              deviceCode,
		UserCode:                shown,
		VerificationURI:         i.opts.Issuer + pathDevice,
		VerificationURIComplete: i.opts.Issuer + pathDevice + "?" + url.Values{"user_code": {shown}}.Encode(),
		ExpiresIn:               int64(i.opts.DeviceCodeTTL / time.Second),
		Interval:                int64(i.opts.DeviceInterval / time.Second),
	}, nil
}

// pruneDevicesLocked drops the device authorizations expired for longer
// than keep.
func (i *Issuer) pruneDevicesLocked(now time.Time, keep time.Duration) {
	for k, d := range i.devices {
		if now.After(d.expires.Add(keep)) {
			delete(i.devices, k)
			delete(i.userCodes, d.userCode)
		}
	}
}

func newUserCode() string {
	b := make([]byte, userCodeLen)
	for k := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(userCodeAlphabet))))
		b[k] = userCodeAlphabet[n.Int64()]
	}
	return string(b)
}

func formatUserCode(c string) string { return c[:4] + "-" + c[4:] }

// normaliseUserCode ignores case, dashes and spaces (RFC 8628 §6.1).
func normaliseUserCode(s string) string {
	return strings.NewReplacer("-", "", " ", "").Replace(strings.ToUpper(s))
}

// redeemDeviceLocked is the device code grant (RFC 8628 §3.4, §3.5).
func (i *Issuer) redeemDeviceLocked(now time.Time, c *client, form url.Values) (*tokenResponse, []string, *oauthError) {
	code := form.Get("device_code")
	if code == "" {
		return nil, nil, badRequest("invalid_request", "device_code is required")
	}
	key := hash(code)
	d := i.devices[key]
	switch {
	case d == nil:
		return nil, nil, badRequest("invalid_grant", "unknown device code")
	case d.client != c:
		return nil, nil, badRequest("invalid_grant", "the device code was issued to another client")
	case now.After(d.expires):
		return nil, nil, badRequest("expired_token", "the device code expired; start a new device authorization")
	case !d.lastPoll.IsZero() && now.Sub(d.lastPoll) < d.interval:
		d.interval += slowDownStep
		d.lastPoll = now
		return nil, nil, badRequest("slow_down", "polling too fast; wait at least the interval, now increased by 5 seconds")
	}
	d.lastPoll = now
	switch d.state {
	case devicePending:
		return nil, nil, badRequest("authorization_pending", "the user has not answered yet")
	case deviceDenied:
		return nil, nil, badRequest("access_denied", "the user denied the request")
	}
	if e := sameResource(form, d.resource); e != nil {
		return nil, nil, e
	}
	delete(i.devices, key)
	delete(i.userCodes, d.userCode)
	g := &grant{client: c, subject: d.subject, scope: d.scope, resource: d.resource}
	resp, e := i.issueLocked(now, g, g.scope)
	return resp, nil, e
}

// serveDevicePage is the verification URI (RFC 8628 §3.3): a form to
// enter the user code, then a confirmation page with Approve/Deny. With
// AutoApprove, opening verification_uri_complete approves at once.
func (i *Issuer) serveDevicePage(w http.ResponseWriter, r *http.Request) {
	typed := r.URL.Query().Get("user_code")
	if typed == "" {
		i.render(w, http.StatusOK, "device.html", devicePage{})
		return
	}
	var nonce string
	now := i.lock()
	wasLocked := now.Before(i.guesses.lockedUntil)
	refused, wait := i.guesses.refuse(now)
	var d *deviceAuth
	if refused == "" && len(typed) <= maxParamBytes {
		d = i.userCodes[normaliseUserCode(typed)]
	}
	if d != nil && (now.After(d.expires) || d.state != devicePending) {
		d = nil
	}
	switch {
	case refused != "":
	case d == nil:
		i.guesses.fail(now)
	case i.opts.AutoApprove:
		d.state, d.subject = deviceApproved, i.opts.Subject
	default:
		nonce = randomToken()
		i.addConsentLocked(nonce, &consent{expires: now.Add(consentTTL), device: d})
	}
	locked := !wasLocked && now.Before(i.guesses.lockedUntil)
	i.mu.Unlock()
	if locked {
		i.log.Warn("issuer: too many wrong user codes, the device page is locked", "for", userCodeLockout)
	}
	if len(typed) > maxParamBytes {
		typed = strings.ToValidUTF8(typed[:maxParamBytes], "")
	}
	switch {
	case refused != "":
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)))
		i.render(w, http.StatusTooManyRequests, "device.html", devicePage{UserCode: typed, Error: refused})
	case d == nil:
		i.render(w, http.StatusBadRequest, "device.html", devicePage{UserCode: typed, Error: "The code " + typed + " is unknown, expired or already used. Check it against your device."})
	case i.opts.AutoApprove:
		i.log.Info("issuer: device approved", "client_id", d.client.id, "sub", i.opts.Subject)
		i.render(w, http.StatusOK, "message.html", messagePage{Title: "Device approved", Message: "Signed in as " + i.opts.Subject + ". Return to your device."})
	default:
		i.render(w, http.StatusOK, "device.html", devicePage{
			UserCode:   formatUserCode(d.userCode),
			ClientName: d.client.displayName(),
			ClientID:   d.client.id,
			Scopes:     strings.Fields(d.scope),
			Resource:   d.resource,
			Subject:    i.opts.Subject,
			Nonce:      nonce,
		})
	}
}

// serveDeviceDecision takes the Approve/Deny answer of a device page.
func (i *Issuer) serveDeviceDecision(w http.ResponseWriter, r *http.Request) {
	form, ok := i.readPageForm(w, r)
	if !ok {
		return
	}
	approve, subject, ok := i.readDecision(w, form)
	if !ok {
		return
	}
	key := hash(form.Get("nonce"))
	now := i.lock()
	c := i.consents[key]
	var d *deviceAuth
	if c != nil && c.device != nil {
		delete(i.consents, key)
		if !now.After(c.expires) && !now.After(c.device.expires) && c.device.state == devicePending {
			d = c.device
		}
	}
	if d != nil && approve {
		d.state, d.subject = deviceApproved, subject
	} else if d != nil {
		d.state = deviceDenied
	}
	i.mu.Unlock()
	switch {
	case d == nil:
		i.errorPage(w, http.StatusBadRequest, "This device page expired or was already answered. Start again on your device.")
	case approve:
		i.log.Info("issuer: device approved", "client_id", d.client.id, "sub", subject)
		i.render(w, http.StatusOK, "message.html", messagePage{Title: "Device approved", Message: "Signed in as " + subject + ". Return to your device."})
	default:
		i.log.Info("issuer: device denied", "client_id", d.client.id)
		i.render(w, http.StatusOK, "message.html", messagePage{Title: "Device denied", Message: "The device gets no access. You can close this page."})
	}
}
