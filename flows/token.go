package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// Token is what a grant yields (RFC 6749 §5.1). It holds secrets: String
// never shows them.
type Token struct {
	AccessToken  string
	RefreshToken string
	// TokenType is "Bearer", or "DPoP" for a token bound to the client's
	// DPoP key (RFC 9449 §5); a token response of another type is refused.
	TokenType string
	// Expiry is zero when the AS gave no expires_in; it is at most
	// MaxTokenLifetime away.
	Expiry time.Time
	// Scopes are the granted scopes, or the requested ones when the AS's
	// answer has no scope (RFC 6749 §5.1).
	Scopes []string
	// RefreshExpiry is when the refresh token expires, from the
	// refresh_expires_in extension (Keycloak's; not in RFC 6749); zero
	// when absent, 0 (no expiry) or not a positive number. It is at most
	// MaxTokenLifetime away.
	RefreshExpiry time.Time
}

// String describes the token without its secrets.
func (t *Token) String() string {
	s := t.TokenType + " token"
	if !t.Expiry.IsZero() {
		s += ", expires " + t.Expiry.Format(time.RFC3339)
	}
	if t.RefreshToken != "" {
		s += ", refreshable"
	}
	return s + ", scopes [" + wire.JoinScope(t.Scopes) + "]"
}

// postForm POSTs a form to an OAuth endpoint with the client's
// authentication, within DefaultFetchTimeout.
func postForm(ctx context.Context, hc *http.Client, field, endpoint string, client Client, form url.Values) (*http.Response, []byte, error) {
	if endpoint == "" {
		return nil, nil, fmt.Errorf("the authorization server has no %s", field)
	}
	if _, err := checkURL(field, endpoint); err != nil {
		return nil, nil, err
	}
	if err := client.check(); err != nil {
		return nil, nil, err
	}
	req, err := client.newRequest(endpoint, form)
	if err != nil {
		return nil, nil, err
	}
	return do(ctx, guard(hc), req, DefaultFetchTimeout)
}

// tokenResponse is the RFC 6749 §5.1 body.
type tokenResponse struct {
	AccessToken  string      `json:"access_token"`
	TokenType    string      `json:"token_type"`
	RefreshToken string      `json:"refresh_token"`
	ExpiresIn    json.Number `json:"expires_in"`
	// RefreshExpiresIn is an extension: ignored unless a positive number
	// (or a string holding one), never an error.
	RefreshExpiresIn json.RawMessage `json:"refresh_expires_in"`
	Scope            *string         `json:"scope"`
	Error            string          `json:"error"`
}

// MaxTokenLifetime caps an access token's expires_in (and a refresh
// token's refresh_expires_in): a longer one (an
// authorization server's 1e12) is taken as this long, so that the expiry
// stays a sane date.
const MaxTokenLifetime = 10 * 365 * 24 * time.Hour

// maxQuoted bounds how much of a remote value an error quotes.
const maxQuoted = 64

// requestToken makes a token request (RFC 6749 §4.1.3, §6, RFC 8628 §3.4)
// and checks its answer with tokenResponse.token; requested is the scope to
// record when the answer has none. Errors wrap *wire.OAuthError and, for
// invalid_grant and invalid_client, their sentinel.
//
// With client.DPoP the request carries a DPoP proof (RFC 9449 §5) and is
// sent once more with the server's nonce when it answers use_dpop_nonce
// (§8); the answer may then be a DPoP token.
func requestToken(ctx context.Context, hc *http.Client, endpoint string, client Client, form url.Values, requested []string) (*Token, error) {
	resp, body, err := postForm(ctx, hc, "token_endpoint", endpoint, client, form)
	if err != nil {
		return nil, err
	}
	if client.DPoP != nil && resp.StatusCode == http.StatusBadRequest && resp.Header.Get(wire.HeaderDPoPNonce) != "" {
		var oe *wire.OAuthError
		if errors.As(oauthError(resp, body), &oe) && oe.Code == wire.ErrUseDPoPNonce {
			client.dpopNonce = resp.Header.Get(wire.HeaderDPoPNonce)
			if resp, body, err = postForm(ctx, hc, "token_endpoint", endpoint, client, form); err != nil {
				return nil, err
			}
		}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, grantError(formError(resp, body, client, form))
	}
	return readTokenOf(endpoint, resp, body, requested, client.DPoP != nil)
}

// readTokenOf reads a 200 answer of a token endpoint: an error field is the
// grant's error (RFC 6749 §5.2), anything else is checked
// (tokenResponse.token); dpop accepts a DPoP token.
func readTokenOf(endpoint string, resp *http.Response, body []byte, requested []string, dpop bool) (*Token, error) {
	var tr tokenResponse
	jsonErr := json.Unmarshal(body, &tr)
	if tr.Error != "" {
		return nil, grantError(oauthError(resp, body))
	}
	if jsonErr != nil {
		return nil, fmt.Errorf("cannot read the token response of %s: %w", endpoint, jsonErr)
	}
	t, err := tr.token(time.Now(), requested, dpop)
	if err != nil {
		return nil, fmt.Errorf("the token response of %s is invalid: %w\nReport it to the authorization server's operator.", endpoint, err)
	}
	return t, nil
}

// token checks a successful token response (RFC 6749 §5.1) and makes it a
// Token, the same for every grant: an access token is required; token_type
// must be Bearer in any case (RFC 6749 §7.1, RFC 6750 §4), and is Bearer when
// absent; expires_in, when present, must be a positive number of seconds,
// and is capped at MaxTokenLifetime.
func (tr *tokenResponse) token(now time.Time, requested []string, dpop bool) (*Token, error) {
	if tr.AccessToken == "" {
		return nil, errors.New("it has no access_token")
	}
	tokenType := "Bearer"
	switch {
	case dpop && strings.EqualFold(tr.TokenType, wire.TokenTypeDPoP):
		tokenType = wire.TokenTypeDPoP
	case tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "Bearer"):
		return nil, fmt.Errorf("token_type %s is not Bearer, the only type agentauth can send (RFC 6750)", quote(tr.TokenType))
	}
	t := &Token{AccessToken: tr.AccessToken, RefreshToken: tr.RefreshToken, TokenType: tokenType, Scopes: requested}
	if tr.Scope != nil && *tr.Scope != "" {
		t.Scopes = wire.SplitScope(*tr.Scope)
	}
	if tr.ExpiresIn != "" {
		secs, err := strconv.ParseFloat(tr.ExpiresIn.String(), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("expires_in %s is not a number", quote(tr.ExpiresIn.String()))
		}
		if !(secs > 0) {
			return nil, fmt.Errorf("expires_in %s is not a positive number of seconds (RFC 6749 §5.1)", quote(tr.ExpiresIn.String()))
		}
		lifetime := MaxTokenLifetime
		if secs < MaxTokenLifetime.Seconds() {
			lifetime = time.Duration(secs * float64(time.Second))
		}
		t.Expiry = now.Add(lifetime)
	}
	secs, err := strconv.ParseFloat(strings.Trim(string(tr.RefreshExpiresIn), `"`), 64)
	if (err == nil || errors.Is(err, strconv.ErrRange)) && secs > 0 && t.RefreshToken != "" {
		t.RefreshExpiry = now.Add(time.Duration(min(secs, MaxTokenLifetime.Seconds()) * float64(time.Second)))
	}
	return t, nil
}

// quote is a remote value for an error message: Go-quoted (control
// characters escaped) and cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "…"
	}
	return strconv.Quote(s)
}

// RefreshRequest is a refresh token grant (RFC 6749 §6).
type RefreshRequest struct {
	TokenEndpoint string
	Client        Client
	RefreshToken  string
	// Resource is sent as the RFC 8707 resource indicator when not empty.
	Resource string
	// Scopes are the scopes the credential holds: they are not sent (a
	// refresh cannot widen them) but kept when the answer has no scope.
	Scopes []string
}

// Refresh exchanges a refresh token for a new access token. When the AS
// does not rotate the refresh token, the old one is kept. invalid_grant
// wraps ErrInvalidGrant (log in again); invalid_client wraps
// ErrInvalidClient (drop the registration).
func Refresh(ctx context.Context, hc *http.Client, req RefreshRequest) (*Token, error) {
	if req.RefreshToken == "" {
		return nil, fmt.Errorf("cannot refresh the token: %w: there is no refresh token", ErrInvalidGrant)
	}
	// Our own POST, not x/oauth2's TokenSource: x/oauth2 refuses an expires_in of 1e12 or "90.5" and lets any token_type through (see requestToken).
	form := url.Values{"grant_type": {wire.GrantRefreshToken}, "refresh_token": {req.RefreshToken}}
	if req.Resource != "" {
		form.Set("resource", req.Resource)
	}
	t, err := requestToken(ctx, hc, req.TokenEndpoint, req.Client, form, req.Scopes)
	if err != nil {
		return nil, fmt.Errorf("cannot refresh the token: %w", err)
	}
	if t.RefreshToken == "" {
		t.RefreshToken = req.RefreshToken
	}
	return t, nil
}

// Token type hints (RFC 7009 §2.1).
const (
	HintRefreshToken = "refresh_token"
	HintAccessToken  = "access_token"
)

// RevokeRequest is an RFC 7009 revocation request.
type RevokeRequest struct {
	Endpoint string
	Client   Client
	Token    string
	// TokenTypeHint is HintRefreshToken, HintAccessToken or empty.
	TokenTypeHint string
}

// Revoke asks the authorization server to revoke a token (RFC 7009 §2.1).
// A 200 (any 2xx) is success, also for a token that was already invalid
// (§2.2); any other answer (a 503 or other 5xx, a 400 unsupported_token_type) or a
// network failure is an error, and the token may still be valid.
func Revoke(ctx context.Context, hc *http.Client, req RevokeRequest) error {
	what := "token"
	if req.TokenTypeHint != "" {
		what = strings.ReplaceAll(req.TokenTypeHint, "_", " ")
	}
	if req.Token == "" {
		return fmt.Errorf("cannot revoke the %s: it is empty", what)
	}
	// Our own POST: x/oauth2 does not implement RFC 7009 revocation.
	form := url.Values{"token": {req.Token}}
	if req.TokenTypeHint != "" {
		form.Set("token_type_hint", req.TokenTypeHint)
	}
	resp, body, err := postForm(ctx, hc, "revocation_endpoint", req.Endpoint, req.Client, form)
	if err != nil {
		return fmt.Errorf("cannot revoke the %s: %w", what, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("cannot revoke the %s: %w", what, grantError(formError(resp, body, req.Client, form)))
	}
	return nil
}
