package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cli/oauth"
	"github.com/cli/oauth/api"
	"github.com/cli/oauth/device"

	"github.com/agentauth/agentauth/wire"
)

// GitHubDotCom is github.com's authorization server, as the Agent Host
// Protocol's example declares it.
const GitHubDotCom = "https://github.com/login/oauth"

// gitHubIssuerPath is where a GitHub host's OAuth endpoints live.
const gitHubIssuerPath = "/login/oauth"

// GitHubHost is a GitHub instance (github.com, a *.ghe.com tenant or a
// GitHub Enterprise Server): its OAuth endpoints, from cli/oauth's
// NewGitHubHost, and its REST API base.
type GitHubHost struct {
	// Base is the instance's origin (https://github.com).
	Base string
	// Endpoints are GitHub's own: /login/device/code, /login/oauth/authorize
	// and /login/oauth/access_token.
	Endpoints oauth.Host
	// API is the REST API base: https://api.github.com, https://api.TENANT.ghe.com,
	// or BASE/api/v3 on an Enterprise Server.
	API string
}

// NewGitHubHost is the GitHub instance at base, an origin (https, or http
// to a loopback address: a test's fake GitHub).
func NewGitHubHost(base string) (*GitHubHost, error) {
	u, err := checkURL("GitHub host", base)
	if err != nil {
		return nil, err
	}
	origin := u.Scheme + "://" + u.Host
	h, err := oauth.NewGitHubHost(origin)
	if err != nil {
		return nil, err
	}
	api := origin + "/api/v3"
	switch host := strings.ToLower(u.Hostname()); {
	case host == "github.com":
		api = "https://api.github.com"
	case strings.HasSuffix(host, ".ghe.com"):
		api = u.Scheme + "://api." + u.Host
	}
	return &GitHubHost{Base: origin, Endpoints: *h, API: api}, nil
}

// KnownGitHubHost recognises a GitHub authorization server by its URL:
// github.com's (GitHubDotCom) or a *.ghe.com tenant's /login/oauth. It
// returns the instance's origin.
func KnownGitHubHost(authServer string) (string, bool) {
	u, err := url.Parse(authServer)
	if err != nil || u.Scheme != "https" || strings.TrimSuffix(u.Path, "/") != gitHubIssuerPath {
		return "", false
	}
	host := strings.ToLower(u.Host)
	if host == "github.com" || strings.HasSuffix(host, ".ghe.com") {
		return "https://" + host, true
	}
	return "", false
}

// IsGitHubIssuerPath reports whether authServer is an origin's /login/oauth,
// where a GitHub Enterprise Server (which publishes no metadata) has its
// OAuth endpoints.
func IsGitHubIssuerPath(authServer string) bool {
	u, err := url.Parse(authServer)
	return err == nil && u.Host != "" && strings.TrimSuffix(u.Path, "/") == gitHubIssuerPath
}

// Metadata is the authorization server metadata the instance would publish:
// its authorization and token endpoints, with issuer the given
// authorization server URL, for the authorization code grant. GitHub
// accepts PKCE S256 (an older Enterprise Server ignores it).
func (h *GitHubHost) Metadata(issuer string) *wire.AuthServerMetadata {
	return &wire.AuthServerMetadata{Issuer: issuer, AuthorizationEndpoint: h.Endpoints.AuthorizeURL,
		TokenEndpoint: h.Endpoints.TokenURL, CodeChallengeMethodsSupported: []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{AuthMethodClientSecretPost}}
}

// GitHubDevice runs GitHub's device flow with cli/oauth (device.RequestCode,
// device.Wait): GitHub answers in form encoding, and reports
// authorization_pending and slow_down in 200 answers, which cli/oauth reads.
// The client is public: no secret is ever sent to the device endpoints.
// cli/oauth sends no RFC 8707 resource (GitHub ignores it anyway) and
// drops expires_in, so a GitHub token's expiry is unknown here.
func GitHubDevice(ctx context.Context, hc *http.Client, h *GitHubHost, clientID string, scopes []string, show func(DeviceCodePrompt)) (*Token, error) {
	post := poster{ctx: ctx, hc: bounded(hc)}
	code, err := device.RequestCode(post, h.Endpoints.DeviceCodeURL, clientID, scopes)
	switch {
	case errors.Is(err, device.ErrUnsupported):
		return nil, fmt.Errorf("cannot start the device login: %s refuses the device flow for client %s (an unknown client id, or Device Flow not enabled)\n"+
			"Check the client id, enable Device Flow in the OAuth app's settings, or log in with --web.", h.Base, clientID)
	case err != nil:
		return nil, fmt.Errorf("cannot start the device login: %w", gitHubError(err))
	}
	if _, err := checkURL("verification_uri", code.VerificationURI); err != nil {
		return nil, fmt.Errorf("cannot start the device login: %w", err)
	}
	var expiry time.Time
	if code.ExpiresIn > 0 && time.Duration(code.ExpiresIn)*time.Second < MaxTokenLifetime {
		expiry = time.Now().Add(time.Duration(code.ExpiresIn) * time.Second)
	}
	show(DeviceCodePrompt{UserCode: code.UserCode, VerificationURI: code.VerificationURI, Expiry: expiry})
	at, err := device.Wait(ctx, post, h.Endpoints.TokenURL, device.WaitOptions{ClientID: clientID, DeviceCode: code})
	var ae *api.Error
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("device login cancelled: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return nil, ErrDeviceCodeExpired
	case errors.As(err, &ae) && ae.Code == "expired_token":
		return nil, ErrDeviceCodeExpired
	case errors.As(err, &ae) && ae.Code == "access_denied":
		return nil, fmt.Errorf("%w: %w", ErrAccessDenied, gitHubError(err))
	case err != nil:
		return nil, fmt.Errorf("cannot get a token for the device login: %w", gitHubError(err))
	}
	if at.Type != "" && !strings.EqualFold(at.Type, "bearer") {
		return nil, fmt.Errorf("the token response of %s is invalid: token_type %s is not Bearer", h.Endpoints.TokenURL, quote(at.Type))
	}
	granted := scopes
	// GitHub separates granted scopes with commas.
	if s := strings.Join(strings.FieldsFunc(at.Scope, func(r rune) bool { return r == ',' || r == ' ' }), " "); s != "" {
		granted = wire.SplitScope(s)
	}
	return &Token{AccessToken: at.Token, RefreshToken: at.RefreshToken, TokenType: "Bearer", Scopes: granted}, nil
}

// gitHubError is cli/oauth's error answer as an *wire.OAuthError (RFC 6749
// §5.2), sanitized like every peer's.
func gitHubError(err error) error {
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code != "" {
		// api.Error keeps error_description to itself: Error() is
		// "DESCRIPTION (CODE)" when there is one.
		desc := strings.TrimSuffix(ae.Error(), " ("+ae.Code+")")
		if desc == ae.Code {
			desc = ""
		}
		return sanitized(wire.OAuthError{Code: ae.Code, Description: desc})
	}
	return err
}

// poster gives cli/oauth, which only calls PostForm, a bounded, guarded
// client whose requests carry ctx and whose answers are capped at
// MaxBodySize.
type poster struct {
	ctx context.Context
	hc  *http.Client
}

func (p poster) PostForm(endpoint string, form url.Values) (*http.Response, error) {
	if _, err := checkURL("GitHub endpoint", endpoint); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(p.ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, MaxBodySize), resp.Body}
	return resp, nil
}

// GitHubUser asks the instance's REST API who owns token (GET /user) and
// returns the login.
func GitHubUser(ctx context.Context, hc *http.Client, h *GitHubHost, token string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, h.API+"/user", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, body, err := do(ctx, guard(hc), req, DefaultFetchTimeout)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", &HTTPStatusError{URL: h.API + "/user", StatusCode: resp.StatusCode}
	}
	var u struct {
		Login string `json:"login"`
	}
	if err := json.Unmarshal(body, &u); err != nil || u.Login == "" {
		return "", fmt.Errorf("cannot read %s/user: no login in the answer", h.API)
	}
	return u.Login, nil
}
