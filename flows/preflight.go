package flows

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/agentauth/agentauth/wire"
)

// ErrAuthorizationRequestRefused: the authorization endpoint refused the
// request without sending the browser back (RFC 6749 §4.1.2.1: an unknown
// client, a redirect URI it has not registered), so a browser sent there
// would stop at the server's error page. The server's words are wrapped
// (a *wire.OAuthError or an *HTTPStatusError).
var ErrAuthorizationRequestRefused = errors.New("the authorization server refuses the login before any sign-in")

// PreflightCodePrefix starts the made-up code of the token endpoint probe
// and PreflightUserAgent names the authorization endpoint probe, so that a
// server's log says what they were.
const (
	PreflightCodePrefix = "agentauth-preflight-"
	PreflightUserAgent  = "agentauth-preflight"
)

// checkClient asks the token endpoint whether it knows the client, before
// a user is sent to sign in: it redeems a code that does not exist, with
// the client's credentials, the redirect URI and a PKCE verifier. The
// server authenticates the client first (RFC 6749 §3.2.1, §5.2): a client
// it knows gets invalid_grant, one it does not (or a wrong secret)
// invalid_client, or a bare 401. A 404 or 405 means no token endpoint at
// that URL (a guessed one, or a mistyped --token-endpoint), and a request
// that gets no answer cannot complete a login either. Every other answer
// lets the login go on: only what was seen ends it.
func checkClient(ctx context.Context, hc *http.Client, tokenEndpoint string, client Client, redirectURI, resource, verifier string) error {
	client.DPoP = nil // no token can come of it
	form := url.Values{"grant_type": {wire.GrantAuthorizationCode}, "code": {PreflightCodePrefix + rand.Text()},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier}}
	if resource != "" {
		form.Set("resource", resource)
	}
	resp, body, err := postForm(ctx, hc, "token_endpoint", tokenEndpoint, client, form)
	if err != nil {
		return fmt.Errorf("cannot reach the token endpoint: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	err = grantError(formError(resp, body, client, form))
	var se *HTTPStatusError
	switch {
	case errors.Is(err, ErrInvalidClient):
		return fmt.Errorf("%s does not know the client %s: %w", tokenEndpoint, client.ID, err)
	case !errors.As(err, &se):
	case se.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%s does not know the client %s: %w: %w", tokenEndpoint, client.ID, ErrInvalidClient, err)
	case se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusMethodNotAllowed:
		return fmt.Errorf("there is no token endpoint at %s: %w", tokenEndpoint, err)
	}
	return nil
}

// probeAuthorization sends the authorization request the browser is about
// to send (authURL) with a state and a PKCE challenge of its own, without
// cookies and without following redirects, and reads the answer as RFC
// 6749 §4.1.2.1 has it: a server checks the client and its redirect URI
// first, and shows its own error page when they fail; every later error
// goes back to the redirect URI.
//
//   - a redirect to redirectURI: the client and its redirect URI are
//     accepted (a server that approves at once issues a code there, which
//     nobody redeems); one with users shows its sign-in page, as it would
//     to a browser that went away.
//   - a redirect elsewhere that carries error= (ORY Hydra sends its
//     refusals to its error page this way): refused.
//   - 400, 404 or 410: the server's own error page, which never sends the
//     browser back: refused, with the page's words; unless they are about
//     the PKCE challenge (a server that shows a page for that, rather than
//     sending it back, checked the client first).
//   - anything else (a sign-in page, a redirect to one, a 401 or 403 of a
//     gateway that challenges browsers, a 5xx, no answer): the login goes
//     on.
//
// A refusal wraps ErrAuthorizationRequestRefused, and ErrInvalidClient too
// when the server says invalid_client.
func probeAuthorization(ctx context.Context, hc *http.Client, authURL, redirectURI string) error {
	hc = guard(hc)
	hc.Jar = nil
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequest(http.MethodGet, authURL, nil)
	if err != nil {
		return fmt.Errorf("cannot probe the authorization endpoint: %w", err)
	}
	req.Header.Set("Accept", "text/html,application/json;q=0.9,*/*;q=0.8")
	req.Header.Set("User-Agent", PreflightUserAgent)
	resp, body, err := do(ctx, hc, req, DefaultFetchTimeout)
	if err != nil {
		// Only the browser must reach it (through a proxy, or trusting a
		// certificate authority, of its own): nothing was learnt.
		return nil
	}
	endpoint := *req.URL
	endpoint.RawQuery, endpoint.Fragment = "", ""
	switch {
	case resp.StatusCode/100 == 3:
		loc, err := req.URL.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil
		}
		q := loc.Query()
		if q.Get("error") == "" || sameEndpoint(loc, redirectURI) {
			return nil
		}
		oe := sanitized(wire.OAuthError{Code: q.Get("error"), Description: strings.TrimSpace(q.Get("error_description") + " " + q.Get("error_hint")), URI: q.Get("error_uri")})
		if oe.Code == "invalid_client" {
			return fmt.Errorf("%w: %s: %w: %w", ErrAuthorizationRequestRefused, endpoint.String(), ErrInvalidClient, oe)
		}
		return fmt.Errorf("%w: %s: %w", ErrAuthorizationRequestRefused, endpoint.String(), oe)
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		se := &HTTPStatusError{URL: endpoint.String(), StatusCode: resp.StatusCode, Detail: pageText(resp, body)}
		if mentionsPKCE(se.Detail) {
			// The probe's missing challenge, refused on a page rather than
			// at the redirect URI: the browser's request has one.
			return nil
		}
		if oe, ok := oauthError(resp, body).(*wire.OAuthError); ok {
			if oe.Code == "invalid_client" {
				return fmt.Errorf("%w: %s: %w: %w", ErrAuthorizationRequestRefused, endpoint.String(), ErrInvalidClient, oe)
			}
			return fmt.Errorf("%w: %s: %w", ErrAuthorizationRequestRefused, endpoint.String(), oe)
		}
		return fmt.Errorf("%w: %w", ErrAuthorizationRequestRefused, se)
	}
	return nil
}

// mentionsPKCE reports whether an error page is about PKCE (RFC 7636).
func mentionsPKCE(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "code_challenge") || strings.Contains(t, "pkce")
}

// sameEndpoint reports whether u is redirectURI with any query.
func sameEndpoint(u *url.URL, redirectURI string) bool {
	r, err := url.Parse(redirectURI)
	return err == nil && strings.EqualFold(u.Scheme, r.Scheme) && strings.EqualFold(u.Host, r.Host) && u.Path == r.Path
}

// htmlSkipped are the elements whose text is not shown; htmlTag any tag.
// Both are compiled on first use, not at every command's start.
var (
	htmlSkipped = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?is)<(script|style|head)\b.*?</(script|style|head)\s*>`)
	})
	htmlTag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<[^>]*>`) })
)

// pageText is what an error page says, for an error message: an HTML
// page's visible text (the title is the head's, and dropped), else the body
// as bodyDetail reads it; clipped and printable either way. Regular
// expressions rather than an HTML parser: this is a message for a person,
// never parsed further, and a page that fools them only garbles that text.
func pageText(resp *http.Response, body []byte) string {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct != "text/html" {
		return bodyDetail(ct, body)
	}
	text := htmlSkipped().ReplaceAllString(string(body), " ")
	text = html.UnescapeString(htmlTag().ReplaceAllString(text, " "))
	return bodyDetail("text/plain", []byte(text))
}
