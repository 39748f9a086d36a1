package issuer

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentauth/agentauth/state"
)

// BrowserSessionCookie is the cookie that says who a browser signed in as
// at the issuer: set by the login (the OpenID Provider's, or the
// development "Sign in as" box), read by the consent and device pages and
// by the broker's /auth/start. Its value is sealed (AES-256-GCM under
// kindBrowserKey): neither readable nor forgeable by the browser.
const BrowserSessionCookie = "agentauth_session"

// BrowserSessionTTL is how long a browser stays signed in at the issuer.
const BrowserSessionTTL = 8 * time.Hour

// kindBrowserKey holds the key that seals browser session cookies, shared
// by every issuer on the Store (replicas).
const kindBrowserKey state.Kind = "browser_key"

// browserSession is the sealed content of BrowserSessionCookie.
type browserSession struct {
	Subject string    `json:"sub"`
	Expires time.Time `json:"exp"`
}

// loadBrowserKey reads, or creates on first use, the cookie sealing key.
func (i *Issuer) loadBrowserKey(ctx context.Context) error {
	return i.store.Update(ctx, func(tx state.Tx) error {
		k, err := tx.Get(kindBrowserKey, "session")
		if errors.Is(err, state.ErrNotFound) {
			k = make([]byte, 32)
			rand.Read(k)
			err = tx.Put(kindBrowserKey, "session", k, time.Time{})
		}
		if err != nil {
			return err
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return err
		}
		i.cookieAEAD, err = cipher.NewGCM(block)
		return err
	})
}

// secureCookies says whether cookies carry Secure: when the issuer is
// https (behind TLS or a proxy that terminates it).
func (i *Issuer) secureCookies() bool { return strings.HasPrefix(i.opts.Issuer, "https:") }

// setBrowserSession signs the browser in as subject: HttpOnly,
// SameSite=Lax (sent on the top-level navigation back from the provider
// and to the broker's links), Secure on https, Path=/.
func (i *Issuer) setBrowserSession(w http.ResponseWriter, subject string) {
	exp := i.now().Add(BrowserSessionTTL)
	plain, _ := json.Marshal(browserSession{Subject: subject, Expires: exp})
	nonce := make([]byte, i.cookieAEAD.NonceSize())
	rand.Read(nonce)
	sealed := i.cookieAEAD.Seal(nonce, nonce, plain, []byte(BrowserSessionCookie))
	http.SetCookie(w, &http.Cookie{Name: BrowserSessionCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: "/",
		Expires: exp, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: i.secureCookies()})
}

// clearBrowserSession signs the browser out.
func (i *Issuer) clearBrowserSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: BrowserSessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: i.secureCookies()})
}

// SignedIn returns the subject the browser of r signed in as at this
// issuer, if its session cookie is valid and not expired.
func (i *Issuer) SignedIn(r *http.Request) (string, bool) {
	c, err := r.Cookie(BrowserSessionCookie)
	if err != nil || len(c.Value) > 4096 {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	n := i.cookieAEAD.NonceSize()
	if err != nil || len(raw) < n {
		return "", false
	}
	plain, err := i.cookieAEAD.Open(nil, raw[:n], raw[n:], []byte(BrowserSessionCookie))
	if err != nil {
		return "", false
	}
	var s browserSession
	if json.Unmarshal(plain, &s) != nil || s.Subject == "" || !i.now().Before(s.Expires) {
		return "", false
	}
	return s.Subject, true
}

// SignInURL is where a page of serve sends a browser that must sign in at
// the issuer first; the login then sends it back to returnTo, a path on
// this origin.
func (i *Issuer) SignInURL(returnTo string) string {
	return i.opts.Issuer + pathLogin + "?" + url.Values{"return_to": {returnTo}}.Encode()
}

// Origin is the issuer identifier: the iss of the tokens it issues, and
// so of the grants whose subject SignedIn can vouch for.
func (i *Issuer) Origin() string { return i.opts.Issuer }

// pageUser is who would approve on a consent or device page. With a login
// provider it is the browser's signed-in subject (signedIn true); a
// browser not signed in is sent to the provider first, coming back to
// this page, and ok is false. With the development box it is the name the
// box proposes: the browser's signed-in subject, else Options.Subject.
func (i *Issuer) pageUser(w http.ResponseWriter, r *http.Request) (subject string, signedIn, ok bool) {
	s, in := i.SignedIn(r)
	switch {
	case i.login == nil && in:
		return s, false, true
	case i.login == nil:
		return i.opts.Subject, false, true
	case in:
		return s, true, true
	}
	i.startLogin(w, r, localPath(r.URL.RequestURI()))
	return "", false, false
}

// ClientName is the name client id registered with, or the id itself, for
// pages of serve that name a client (the broker's confirmation page).
func (i *Issuer) ClientName(ctx context.Context, id string) string {
	var c *client
	i.store.View(ctx, func(tx state.Tx) error {
		var err error
		c, err = i.clientTx(tx, id)
		return err
	})
	if c == nil {
		return id
	}
	return c.displayName()
}
