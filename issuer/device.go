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

	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
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

// deviceRecord is one device authorization (RFC 8628 §3.2), keyed by the
// hash of its device code. It is kept DeviceCodeTTL past its expiry so
// that a late poll still learns expired_token (§3.5).
type deviceRecord struct {
	ClientID string `json:"client_id"`
	// UserCodeHash is the SHA-256 of the normalised user code (8 letters,
	// no dash), the key of its userCodeRecord.
	UserCodeHash string        `json:"user_code_sha256"`
	Scope        string        `json:"scope"`
	Resource     string        `json:"resource"`
	Expires      time.Time     `json:"expires"`
	Interval     time.Duration `json:"interval"`
	LastPoll     time.Time     `json:"last_poll"`
	State        deviceState   `json:"state"`
	Subject      string        `json:"sub,omitempty"`
}

// userCodeRecord finds a device authorization by the hash of its user
// code.
type userCodeRecord struct {
	DeviceKey string `json:"device_key"`
}

// putDeviceTx stores d under key, and with withUserCode (a new
// authorization) its user code's record. (Updates leave the user code's record alone: a poll then locks
// only the device record, and cannot deadlock with the device page on
// PostgreSQL.)
func (i *Issuer) putDeviceTx(tx state.Tx, key string, d *deviceRecord, withUserCode bool) error {
	keep := d.Expires.Add(i.opts.DeviceCodeTTL)
	if err := putRecord(tx, kindDevice, key, d, keep); err != nil || !withUserCode {
		return err
	}
	return putRecord(tx, kindUserCode, d.UserCodeHash, userCodeRecord{DeviceKey: key}, keep)
}

// deviceByUserCodeTx finds the device authorization of a normalised user
// code, and its key.
func deviceByUserCodeTx(tx state.Tx, userCode string) (string, *deviceRecord, error) {
	u, err := getRecord[userCodeRecord](tx, kindUserCode, hash(userCode))
	if err != nil || u == nil {
		return "", nil, err
	}
	d, err := getRecord[deviceRecord](tx, kindDevice, u.DeviceKey)
	return u.DeviceKey, d, err
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
	now := i.clock(r.Context())
	full, userCode := false, ""
	err := i.store.Update(r.Context(), func(tx state.Tx) error {
		n, err := tx.Count(kindDevice, maxDeviceAuthorizations)
		if err == nil && n >= maxDeviceAuthorizations {
			// Expired ones are kept for late polls; drop them now.
			_, err = tx.DeleteExpired(kindDevice, now.Add(i.opts.DeviceCodeTTL), maxDeviceAuthorizations)
			if err == nil {
				n, err = tx.Count(kindDevice, maxDeviceAuthorizations)
			}
		}
		if err != nil {
			return err
		}
		if full = n >= maxDeviceAuthorizations; full {
			return nil
		}
		userCode = newUserCode()
		for {
			_, d, err := deviceByUserCodeTx(tx, userCode)
			if err != nil {
				return err
			}
			if d == nil {
				break
			}
			userCode = newUserCode()
		}
		return i.putDeviceTx(tx, hash(deviceCode), &deviceRecord{
			ClientID:     c.id,
			UserCodeHash: hash(userCode),
			Scope:        scope,
			Resource:     resource,
			Expires:      now.Add(i.opts.DeviceCodeTTL),
			Interval:     i.opts.DeviceInterval,
		}, true)
	})
	if err != nil {
		return nil, i.storeFailed(err)
	}
	if full {
		i.log.Warn("issuer: device authorization refused, too many pending", "max", maxDeviceAuthorizations)
		return nil, &oauthError{status: http.StatusServiceUnavailable, body: wire.OAuthError{Code: "temporarily_unavailable", Description: fmt.Sprintf(
			"the issuer already holds %d pending device authorizations; try again when some are answered or expired (%s)", maxDeviceAuthorizations, i.opts.DeviceCodeTTL)}}
	}
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

// redeemDeviceTx is the device code grant (RFC 8628 §3.4, §3.5).
func (i *Issuer) redeemDeviceTx(is *issuing, c *client, form url.Values) (*tokenResponse, []string, *oauthError, error) {
	code := form.Get("device_code")
	if code == "" {
		return nil, nil, badRequest("invalid_request", "device_code is required"), nil
	}
	tx, now, key := is.tx, is.now, hash(code)
	d, err := getRecord[deviceRecord](tx, kindDevice, key)
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case d == nil:
		return nil, nil, badRequest("invalid_grant", "unknown device code"), nil
	case d.ClientID != c.id:
		return nil, nil, badRequest("invalid_grant", "the device code was issued to another client"), nil
	case now.After(d.Expires):
		return nil, nil, badRequest("expired_token", "the device code expired; start a new device authorization"), nil
	case !d.LastPoll.IsZero() && now.Sub(d.LastPoll) < d.Interval:
		d.Interval += slowDownStep
		d.LastPoll = now
		return nil, nil, badRequest("slow_down", "polling too fast; wait at least the interval, now increased by 5 seconds"), i.putDeviceTx(tx, key, d, false)
	}
	d.LastPoll = now
	switch d.State {
	case devicePending:
		return nil, nil, badRequest("authorization_pending", "the user has not answered yet"), i.putDeviceTx(tx, key, d, false)
	case deviceDenied:
		return nil, nil, badRequest("access_denied", "the user denied the request"), i.putDeviceTx(tx, key, d, false)
	}
	if e := sameResource(form, d.Resource); e != nil {
		return nil, nil, e, i.putDeviceTx(tx, key, d, false)
	}
	if err := tx.Delete(kindDevice, key); err != nil {
		return nil, nil, nil, err
	}
	if err := tx.Delete(kindUserCode, d.UserCodeHash); err != nil {
		return nil, nil, nil, err
	}
	g := &grantRecord{ClientID: c.id, Subject: d.Subject, Scope: d.Scope, Resource: d.Resource}
	return i.issueTx(is, c, randomID(), g, g.Scope)
}

// serveDevicePage is the verification URI (RFC 8628 §3.3): a form to
// enter the user code, then a confirmation page with Approve/Deny. With
// AutoApprove, opening verification_uri_complete approves at once.
func (i *Issuer) serveDevicePage(w http.ResponseWriter, r *http.Request) {
	user, signedIn, ok := i.pageUser(w, r)
	if !ok {
		return
	}
	var pageSubject string
	if signedIn {
		pageSubject = user
	}
	typed := r.URL.Query().Get("user_code")
	if typed == "" {
		i.render(w, http.StatusOK, "device.html", devicePage{})
		return
	}
	now := i.clock(r.Context())
	i.mu.Lock()
	wasLocked := now.Before(i.guesses.lockedUntil)
	refused, wait := i.guesses.refuse(now)
	i.mu.Unlock()
	var nonce string
	var d *deviceRecord
	var cl *client
	if refused == "" && len(typed) <= maxParamBytes {
		err := i.store.Update(r.Context(), func(tx state.Tx) error {
			d, cl = nil, nil
			key, rec, err := deviceByUserCodeTx(tx, normaliseUserCode(typed))
			if err != nil || rec == nil || now.After(rec.Expires) || rec.State != devicePending {
				return err
			}
			if cl, err = i.clientTx(tx, rec.ClientID); err != nil || cl == nil {
				return err
			}
			d = rec
			if i.opts.AutoApprove {
				d.State, d.Subject = deviceApproved, user
				return i.putDeviceTx(tx, key, d, false)
			}
			nonce = randomToken()
			return addConsentTx(tx, nonce, &consentRecord{Expires: now.Add(consentTTL), DeviceKey: key, Subject: pageSubject})
		})
		if err != nil {
			i.storePage(w, err)
			return
		}
	}
	i.mu.Lock()
	if refused == "" && d == nil {
		i.guesses.fail(now)
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
		if !signedIn {
			i.setBrowserSession(w, user)
		}
		i.log.Info("issuer: device approved", "client_id", cl.id, "sub", user)
		i.auditApproval(cl.id, user, d.Scope, "device")
		i.render(w, http.StatusOK, "message.html", messagePage{Title: "Device approved", Message: "Signed in as " + user + ". Return to your device."})
	default:
		i.render(w, http.StatusOK, "device.html", devicePage{
			UserCode:   formatUserCode(normaliseUserCode(typed)),
			ClientName: cl.displayName(),
			ClientID:   cl.id,
			Unverified: !i.verified(cl),
			Scopes:     i.scopeLines(d.Scope),
			Resource:   d.Resource,
			Subject:    user,
			SignedIn:   signedIn,
			Nonce:      nonce,
		})
	}
}

// serveDeviceDecision takes the Approve/Deny answer of a device page.
func (i *Issuer) serveDeviceDecision(w http.ResponseWriter, r *http.Request) {
	var dev *deviceRecord
	d, ok := i.takeDecision(w, r, "device page", "on your device",
		func(c *consentRecord) bool { return c.DeviceKey != "" },
		func(tx state.Tx, c *consentRecord, d decision) error {
			dev = nil
			rec, err := getRecord[deviceRecord](tx, kindDevice, c.DeviceKey)
			if err != nil || rec == nil || d.now.After(c.Expires) || d.now.After(rec.Expires) || rec.State != devicePending {
				return err
			}
			dev = rec
			if d.approve {
				dev.State, dev.Subject = deviceApproved, d.subject
			} else {
				dev.State = deviceDenied
			}
			return i.putDeviceTx(tx, c.DeviceKey, dev, false)
		},
		func() bool { return dev != nil })
	if !ok {
		return
	}
	if d.approve {
		if i.login == nil {
			i.setBrowserSession(w, d.subject)
		}
		i.log.Info("issuer: device approved", "client_id", dev.ClientID, "sub", d.subject)
		i.auditApproval(dev.ClientID, d.subject, dev.Scope, "device")
		i.render(w, http.StatusOK, "message.html", messagePage{Title: "Device approved", Message: "Signed in as " + d.subject + ". Return to your device."})
		return
	}
	i.log.Info("issuer: device denied", "client_id", dev.ClientID)
	i.opts.Telemetry.Audit(ops.EventConsent, "client_id", dev.ClientID, "sub", d.subject, "scope", dev.Scope, "decision", "denied", "flow", "device")
	i.render(w, http.StatusOK, "message.html", messagePage{Title: "Device denied", Message: "The device gets no access. You can close this page."})
}
