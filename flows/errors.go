package flows

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/agentauth/agentauth/wire"
)

// Errors of discovery and of the URL checks. Each failure wraps exactly one
// of them (errors.Is), with a message naming what did not match.
var (
	// ErrInvalidURL: a URL that does not parse or has no host.
	ErrInvalidURL = errors.New("not an absolute URL")
	// ErrInsecureHTTP: an http URL to a host that is not loopback.
	ErrInsecureHTTP = errors.New("http is allowed only to a loopback address (127.0.0.0/8, ::1, localhost); use https")
	// ErrUnsupportedScheme: any scheme but https and http (javascript:, data:, file:, …).
	ErrUnsupportedScheme = errors.New("only https URLs, or http to a loopback address, are allowed")
	// ErrResponseTooLarge: a response body over MaxBodySize.
	ErrResponseTooLarge = errors.New("the response exceeds 1 MiB")
	// ErrTimeout: no complete answer within the fetch timeout.
	ErrTimeout = errors.New("no answer in time")
	// ErrResourceMismatch: the protected resource metadata is for another
	// resource than the target (RFC 9728 §3.3).
	ErrResourceMismatch = errors.New("the protected resource metadata is for another resource")
	// ErrNoAuthorizationServers: the protected resource metadata names no
	// authorization server.
	ErrNoAuthorizationServers = errors.New("the protected resource metadata names no authorization server")
	// ErrIssuerMismatch: the authorization server metadata names another
	// issuer than the one asked for (RFC 8414 §3.3).
	ErrIssuerMismatch = errors.New("the authorization server metadata is for another issuer")
	// ErrPKCEUnsupported: code_challenge_methods_supported lacks S256, or is absent.
	ErrPKCEUnsupported = errors.New("the authorization server does not advertise PKCE with S256")
	// ErrNoAuthServerMetadata: none of the RFC 8414 / OpenID Connect
	// well-known documents exists.
	ErrNoAuthServerMetadata = errors.New("no authorization server metadata found")
)

// Errors of the flows.
var (
	// ErrNoAuthMethod: a confidential client and an authorization server
	// that accepts neither client_secret_basic nor client_secret_post.
	ErrNoAuthMethod = errors.New("no client authentication method in common with the authorization server")
	// ErrCallbackPortInUse: the loopback callback port is taken.
	ErrCallbackPortInUse = errors.New("the callback port is already in use")
	// ErrAuthorizationRefused: the authorization response carried error=
	// (RFC 6749 §4.1.2.1); the *wire.OAuthError is wrapped too.
	ErrAuthorizationRefused = errors.New("the authorization server refused the authorization")
	// ErrResponseIssuer: the authorization response's iss is wrong, or
	// missing although the server said it sends it (RFC 9207 §2.4).
	ErrResponseIssuer = errors.New("the authorization response does not come from the expected issuer")
	// ErrLoginTimeout: no authorization response before the flow's timeout.
	ErrLoginTimeout = errors.New("timed out waiting for the authorization in the browser")
	// ErrDeviceCodeExpired: the device code expired before the user approved
	// (RFC 8628 §3.5 expired_token).
	ErrDeviceCodeExpired = errors.New("the device code expired before the login was approved")
	// ErrAccessDenied: the user declined the device authorization (RFC 8628
	// §3.5 access_denied).
	ErrAccessDenied = errors.New("the login was denied")
	// ErrInvalidGrant: the grant (refresh token, code, device code) is
	// invalid, expired or revoked: the user must log in again.
	ErrInvalidGrant = errors.New("the grant is no longer valid; log in again")
	// ErrInvalidClient: the authorization server does not know or accept the
	// client: a stored registration is stale and should be dropped.
	ErrInvalidClient = errors.New("the authorization server rejected the client")
	// ErrRegistrationRefused: dynamic client registration failed (RFC 7591 §3.2.2).
	ErrRegistrationRefused = errors.New("client registration refused")
)

// HTTPStatusError is an HTTP answer that is neither a success nor an
// RFC 6749 §5.2 error body.
type HTTPStatusError struct {
	URL        string
	StatusCode int
	// Detail is what the body says, printable and clipped to
	// maxDetailLength: an RFC 9457 problem's title and detail, else the
	// start of the body.
	Detail string
}

func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s from %s", e.StatusCode, http.StatusText(e.StatusCode), e.URL)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// maxDetailLength bounds HTTPStatusError.Detail, in characters.
const maxDetailLength = 200

// bodyDetail is what an error body that is not RFC 6749 JSON says: an
// RFC 9457 problem's "title: detail" (application/problem+json), else the
// body's text; control characters and runs of spaces become one space
// (a terminal must not receive escape codes), clipped to maxDetailLength.
func bodyDetail(ct string, body []byte) string {
	text := string(body)
	if ct == "application/problem+json" {
		var p struct {
			Title  string `json:"title"`
			Detail string `json:"detail"`
		}
		if json.Unmarshal(body, &p) == nil && (p.Title != "" || p.Detail != "") {
			text = strings.TrimPrefix(p.Title+": "+p.Detail, ": ")
			text = strings.TrimSuffix(text, ": ")
		}
	}
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(text, " "))
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > maxDetailLength {
		text = string(r[:maxDetailLength]) + "…"
	}
	return text
}

// URLError is a URL refused by CheckURL: Field names where it came from
// (for example "token_endpoint"); Err is ErrInvalidURL, ErrInsecureHTTP or
// ErrUnsupportedScheme.
type URLError struct {
	Field string
	URL   string
	Err   error
}

func (e *URLError) Error() string {
	u := e.URL
	if len(u) > 80 {
		u = u[:80] + "…"
	}
	if e.Field == "" {
		return fmt.Sprintf("%q: %v", u, e.Err)
	}
	return fmt.Sprintf("%s %q: %v", e.Field, u, e.Err)
}

func (e *URLError) Unwrap() error { return e.Err }

// oauthError reads the body of an error response (RFC 6749 §5.2: JSON with
// error, error_description, error_uri; form-encoded bodies are accepted
// too). It returns a *wire.OAuthError when the body names an error, else an
// *HTTPStatusError.
func oauthError(resp *http.Response, body []byte) error {
	var oe wire.OAuthError
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/x-www-form-urlencoded", "text/plain":
		if v, err := url.ParseQuery(string(body)); err == nil {
			oe = wire.OAuthError{Code: v.Get("error"), Description: v.Get("error_description"), URI: v.Get("error_uri")}
		}
	default:
		_ = json.Unmarshal(body, &oe)
	}
	if oe.Code == "" {
		se := &HTTPStatusError{StatusCode: resp.StatusCode, Detail: bodyDetail(ct, body)}
		if resp.Request != nil {
			se.URL = resp.Request.URL.String()
		}
		return se
	}
	return sanitized(oe)
}

// formError is oauthError for the answer to a form POST (token, revocation):
// a Detail quoting the body never repeats a value the form or the client
// sent (a code, verifier, token or client secret echoed by the server).
func formError(resp *http.Response, body []byte, client Client, form url.Values) error {
	err := oauthError(resp, body)
	var se *HTTPStatusError
	if !errors.As(err, &se) || se.Detail == "" {
		return err
	}
	secrets := []string{client.Secret}
	for _, vs := range form {
		secrets = append(secrets, vs...)
	}
	for _, v := range secrets {
		if len(v) >= minRedacted {
			se.Detail = strings.ReplaceAll(se.Detail, v, "[redacted]")
		}
	}
	return se
}

// minRedacted is the shortest form value formError hides: shorter ones
// (grant types, hints) are not secrets and would mangle the text.
const minRedacted = 16

// sanitized keeps an authorization server's error printable: RFC 6749 §5.2
// allows only visible ASCII, and a terminal must not receive escape codes.
func sanitized(oe wire.OAuthError) *wire.OAuthError {
	clean := func(s string) string {
		s = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, s)
		if len(s) > 300 {
			s = s[:300] + "…"
		}
		return s
	}
	return &wire.OAuthError{Code: clean(oe.Code), Description: clean(oe.Description), URI: clean(oe.URI)}
}

// grantError classifies a token endpoint error (RFC 6749 §5.2): invalid_grant
// and invalid_client get their sentinel; the *wire.OAuthError stays reachable
// with errors.As.
func grantError(err error) error {
	var oe *wire.OAuthError
	if !errors.As(err, &oe) {
		return err
	}
	switch oe.Code {
	case "invalid_grant":
		return fmt.Errorf("%w: %w", ErrInvalidGrant, err)
	case "invalid_client":
		return fmt.Errorf("%w: %w", ErrInvalidClient, err)
	}
	return err
}
