package issuer

import (
	"net/http"
	"net/url"
	"strings"
)

// errorTitle is the title of the issuer's error pages (errorPage).
const errorTitle = "Authorization error"

// refuseSignIn ends a sign-in at the login provider that signed nobody in
// (the provider's error, such as the user's access_denied there; a user
// outside the allow-lists; an answer that did not check out). When the
// sign-in was started by an authorization request (returnTo is /authorize
// with its query) whose client and redirect URI still check out as
// serveAuthorize checks them, the refusal goes to that redirect URI with
// error, error_description, state and iss (RFC 6749 §4.1.2.1, RFC 9207),
// so that the waiting client stops at once and says why; otherwise (the
// device page, serve's own pages, a client or redirect URI that no longer
// checks out) the browser gets a page in words, with status and title.
func (i *Issuer) refuseSignIn(w http.ResponseWriter, r *http.Request, returnTo, code string, status int, title, message string) {
	if req := i.returnedRequest(r, returnTo); req != nil {
		i.redirectBack(w, r, req, url.Values{"error": {code}, "error_description": {errorDescription(message)}})
		return
	}
	i.render(w, status, "message.html", messagePage{Title: title, Message: message})
}

// returnedRequest is the authorization request a sign-in returns to, when
// returnTo is one and its client and redirect URI check out; nil
// otherwise. Only the parameters that send the browser back are read
// (client_id, redirect_uri, state): an error goes back to a redirect URI
// only once it is verified for the client.
func (i *Issuer) returnedRequest(r *http.Request, returnTo string) *authRequest {
	u, err := url.Parse(returnTo)
	if err != nil || u.Path != pathAuthorize {
		return nil
	}
	q := u.Query()
	if len(q["client_id"]) != 1 || len(q["redirect_uri"]) > 1 || len(q.Get("client_id")) > maxParamBytes || len(q.Get("redirect_uri")) > maxURIBytes {
		return nil
	}
	c, err := i.lookupClient(r.Context(), q.Get("client_id"))
	if err != nil || c == nil {
		return nil
	}
	req := &authRequest{client: c, redirectURI: q.Get("redirect_uri"), redirectGiven: q.Has("redirect_uri")}
	switch {
	case !req.redirectGiven && len(c.redirectURIs) == 1 && !isLoopbackURI(c.redirectURIs[0]):
		req.redirectURI = c.redirectURIs[0] // RFC 6749 §3.1.2.3
	case !req.redirectGiven || !c.matchRedirect(req.redirectURI):
		return nil
	}
	if len(q.Get("state")) <= maxStateBytes {
		req.state = q.Get("state")
	}
	return req
}

// errorDescription keeps to the characters RFC 6749 §4.1.2.1 allows in
// error_description (%x20-21 / %x23-5B / %x5D-7E): any other becomes "?".
func errorDescription(s string) string {
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return '?'
		}
		return c
	}, s)
}
