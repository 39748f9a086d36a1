package flows

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/wire"
)

// DefaultLoginTimeout bounds the wait for the browser.
const DefaultLoginTimeout = 5 * time.Minute

// AuthCodeRequest is an authorization code grant with PKCE over a loopback
// redirect (RFC 6749 §4.1, RFC 7636, RFC 8252 §7.3).
type AuthCodeRequest struct {
	// Metadata gives the issuer, the authorization and token endpoints, and
	// whether the AS sends iss in its responses (RFC 9207).
	Metadata *wire.AuthServerMetadata
	Client   Client
	Scopes   []string
	// Resource is sent, exactly as given, as the RFC 8707 resource indicator
	// on the authorization and token requests; empty leaves it out.
	Resource string
	// CallbackHost is the redirect URI's host: "127.0.0.1" (default) or
	// "localhost". The listener is on 127.0.0.1 either way.
	CallbackHost string
	// CallbackPort is the listener's port; 0 picks a free one.
	CallbackPort int
	// ShowURL receives the authorization URL, for the caller to display.
	ShowURL func(url string)
	// OpenURL opens the authorization URL in a browser. When it fails the
	// flow goes on if ShowURL showed the URL, and stops otherwise.
	OpenURL func(url string) error
	// Timeout bounds the wait for the browser; 0 means DefaultLoginTimeout.
	Timeout time.Duration
	// NoPreflight skips the checks made before the browser is sent
	// (checkClient, probeAuthorization).
	NoPreflight bool
	// ClientCheckOnly sends only the token endpoint's check of the
	// client, for a registration whose redirect URIs the caller made.
	ClientCheckOnly bool
}

// AuthorizationCode runs the authorization code grant: it listens on the
// loopback callback, sends the user to the authorization endpoint with
// PKCE S256 (x/oauth2 GenerateVerifier, S256ChallengeOption), state and
// resource, waits for the redirect, and exchanges the code.
//
// Callbacks with the wrong state are answered 400 and ignored (RFC 6749
// §10.12). An iss that differs from the issuer, or a missing iss when the
// AS advertises authorization_response_iss_parameter_supported, ends the
// flow (RFC 9207 §2.4). An error= response ends it with ErrAuthorizationRefused
// and the AS's *wire.OAuthError. The listener is closed on every return.
//
// Before the URL is shown, the token endpoint is asked whether it knows
// the client (checkClient) and the authorization request is sent once
// without a browser (probeAuthorization): an unknown client, an
// unregistered redirect URI or a missing endpoint ends the flow at once
// instead of leaving the user at the server's error page.
func AuthorizationCode(ctx context.Context, hc *http.Client, req AuthCodeRequest) (*Token, error) {
	md := req.Metadata
	if md == nil {
		return nil, errors.New("cannot log in: no authorization server metadata")
	}
	for _, e := range []struct{ field, url string }{
		{"authorization_endpoint", md.AuthorizationEndpoint}, {"token_endpoint", md.TokenEndpoint},
	} {
		if e.url == "" {
			return nil, fmt.Errorf("cannot log in: the authorization server %s has no %s", md.Issuer, e.field)
		}
		if _, err := checkURL(e.field, e.url); err != nil {
			return nil, fmt.Errorf("cannot log in: %w", err)
		}
	}
	if err := req.Client.check(); err != nil {
		return nil, fmt.Errorf("cannot log in: %w", err)
	}
	host := cmp.Or(req.CallbackHost, "127.0.0.1")
	if host != "127.0.0.1" && host != "localhost" {
		return nil, fmt.Errorf("cannot log in: the callback host must be 127.0.0.1 or localhost, not %q", host)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(req.CallbackPort)))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("cannot listen for the login callback: %w: 127.0.0.1:%d", ErrCallbackPortInUse, req.CallbackPort)
		}
		return nil, fmt.Errorf("cannot listen for the login callback: %w", err)
	}
	redirectURI := fmt.Sprintf("http://%s:%d/callback", host, ln.Addr().(*net.TCPAddr).Port)

	cfg := req.Client.oauth2Config(md.AuthorizationEndpoint, redirectURI, req.Scopes)
	verifier := oauth2.GenerateVerifier()
	var resource []oauth2.AuthCodeOption
	if req.Resource != "" {
		resource = append(resource, oauth2.SetAuthURLParam("resource", req.Resource))
	}
	cb := &callback{
		state:      rand.Text(),
		issuer:     md.Issuer,
		requireIss: md.AuthorizationResponseIssParameterSupported,
		result:     make(chan callbackResult, 1),
	}
	authURL := cfg.AuthCodeURL(cb.state, append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, resource...)...)
	if !req.NoPreflight {
		// What can be checked is checked before the user is sent: a
		// refusal the browser would stop at ends the login now. The
		// probes are requests as PKCE requires them (RFC 7636 §4.3, MCP's
		// authorization), the authorization request first with a
		// verifier of their own, which the token request then presents.
		// A guessed token endpoint is checked first: its 404 names the
		// endpoint flags.
		probeVerifier := oauth2.GenerateVerifier()
		probeURL := cfg.AuthCodeURL(rand.Text(), append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(probeVerifier)}, resource...)...)
		if !req.ClientCheckOnly && !md.Guessed {
			if err := probeAuthorization(ctx, hc, probeURL, redirectURI); err != nil {
				return nil, err
			}
		}
		if err := checkClient(ctx, hc, md.TokenEndpoint, req.Client, redirectURI, req.Resource, probeVerifier); err != nil {
			return nil, err
		}
		if !req.ClientCheckOnly && md.Guessed {
			if err := probeAuthorization(ctx, hc, probeURL, redirectURI); err != nil {
				return nil, err
			}
		}
	}

	srv := &http.Server{Handler: cb, ReadHeaderTimeout: DefaultFetchTimeout}
	go srv.Serve(ln)
	defer func() {
		// Let the page that was just answered reach the browser, then close.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = srv.Close()
		_ = ln.Close() // in case Serve has not started yet
	}()

	if req.ShowURL != nil {
		req.ShowURL(authURL)
	}
	if req.OpenURL != nil {
		if err := req.OpenURL(authURL); err != nil && req.ShowURL == nil {
			return nil, fmt.Errorf("cannot open the browser: %w", err)
		}
	}

	timeout := cmp.Or(req.Timeout, DefaultLoginTimeout)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var code string
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("login cancelled: %w", ctx.Err())
	case <-timer.C:
		return nil, fmt.Errorf("%w (%s)", ErrLoginTimeout, timeout)
	case r := <-cb.result:
		if r.err != nil {
			return nil, r.err
		}
		code = r.code
	}

	// The exchange (RFC 6749 §4.1.3, RFC 7636 §4.5) goes through
	// requestToken, not x/oauth2's Exchange, so that its answer is checked
	// exactly as a refresh's or a device poll's: x/oauth2 caps expires_in
	// at 68 years, takes a negative one as already expired, refuses 1e12,
	// and lets any token_type through.
	form := url.Values{"grant_type": {wire.GrantAuthorizationCode}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {verifier}}
	if req.Resource != "" {
		form.Set("resource", req.Resource)
	}
	tok, err := requestToken(ctx, hc, md.TokenEndpoint, req.Client, form, req.Scopes)
	if err != nil {
		return nil, fmt.Errorf("cannot exchange the authorization code: %w", err)
	}
	return tok, nil
}

type callbackResult struct {
	code string
	err  error
}

// callback serves the loopback redirect (RFC 8252 §7.3).
type callback struct {
	state      string
	issuer     string
	requireIss bool
	result     chan callbackResult
}

func (c *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(c.state)) != 1 {
		page(w, http.StatusBadRequest, "Not this login",
			"This response does not belong to the login agentauth is waiting for (its state does not match). agentauth is still waiting.")
		return
	}
	var res callbackResult
	var refused *wire.OAuthError
	switch {
	case q.Has("iss") && q.Get("iss") != c.issuer:
		res.err = fmt.Errorf("%w: it names issuer %q, the login went to %q (RFC 9207)", ErrResponseIssuer, q.Get("iss"), c.issuer)
	case !q.Has("iss") && c.requireIss:
		res.err = fmt.Errorf("%w: %s says it sends iss, and this response has none (RFC 9207)", ErrResponseIssuer, c.issuer)
	case q.Get("error") != "":
		refused = sanitized(wire.OAuthError{Code: q.Get("error"), Description: q.Get("error_description"), URI: q.Get("error_uri")})
		res.err = fmt.Errorf("%w: %w", ErrAuthorizationRefused, refused)
	case q.Get("code") == "":
		res.err = errors.New("the authorization response has no code")
	default:
		res.code = q.Get("code")
	}
	switch {
	case refused != nil:
		page(w, http.StatusBadRequest, "Login failed", refusalPage(refused))
	case res.err != nil:
		page(w, http.StatusBadRequest, "Login failed", res.err.Error())
	default:
		page(w, http.StatusOK, "Logged in", "agentauth received the authorization. You can close this window and return to the terminal.")
	}
	select {
	case c.result <- res:
	default: // a result is already in
	}
}

// pageTemplate is parsed on first use, not at every command's start-up.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>agentauth: {{.Title}}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40em; margin: 4em auto">
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
</body></html>
`))
})

// page answers the browser with a small HTML page; html/template escapes
// the text, which may quote the authorization server.
func page(w http.ResponseWriter, status int, title, message string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_ = pageTemplate().Execute(w, struct{ Title, Message string }{title, message})
}
