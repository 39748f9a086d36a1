package flows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/wire"
)

// The device grant runs on x/oauth2: DeviceAuth for the device
// authorization request and DeviceAccessToken for the polling, both with
// the RFC 8707 resource parameter (SetAuthURLParam reaches the request and
// every poll). x/oauth2 polls every interval (5 s when the AS gives none)
// and 5 s slower after each slow_down (RFC 8628 §3.2, §3.5). What it cannot
// do is added here: HTTP Basic client authentication on the device
// authorization request (DeviceAuth sends client_id alone), the checks of
// the answer's URLs, and the reading of the token answer, which is read
// again by readTokenOf, the one check of every grant: x/oauth2 fails on an
// expires_in that is not an integer (1e12, "90.5") and lets any token_type
// through.

// DeviceRequest is a device authorization grant (RFC 8628).
type DeviceRequest struct {
	// Metadata gives the device_authorization_endpoint and token_endpoint.
	Metadata *wire.AuthServerMetadata
	Client   Client
	Scopes   []string
	// Resource is sent, exactly as given, as the RFC 8707 resource indicator
	// on the device authorization request and on every token poll; empty
	// leaves it out.
	Resource string
	// ShowCode receives what the user must see; it is called once, before
	// polling starts, and must not block.
	ShowCode func(DeviceCodePrompt)
}

// DeviceCodePrompt is what the user needs to approve a device login
// (RFC 8628 §3.2). It holds no secret: the device code stays inside.
type DeviceCodePrompt struct {
	UserCode        string
	VerificationURI string
	// VerificationURIComplete embeds the user code; empty when the AS has none.
	VerificationURIComplete string
	// Expiry is when the codes expire (zero if the AS did not say).
	Expiry time.Time
}

// DeviceCode runs the device authorization grant: the device authorization
// request (RFC 8628 §3.1, with client authentication, scope and resource),
// ShowCode, then token polls (§3.4) until a token, ErrDeviceCodeExpired
// (expired_token, or the codes' lifetime is over), ErrAccessDenied
// (access_denied) or another error.
func DeviceCode(ctx context.Context, hc *http.Client, req DeviceRequest) (*Token, error) {
	md := req.Metadata
	if md == nil {
		return nil, errors.New("cannot start the device login: no authorization server metadata")
	}
	if md.DeviceAuthorizationEndpoint == "" {
		return nil, fmt.Errorf("cannot start the device login: the authorization server %s has no device_authorization_endpoint", md.Issuer)
	}
	if req.ShowCode == nil {
		return nil, errors.New("cannot start the device login: nowhere to show the user code")
	}
	for field, u := range map[string]string{"device_authorization_endpoint": md.DeviceAuthorizationEndpoint, "token_endpoint": md.TokenEndpoint} {
		if _, err := checkURL(field, u); err != nil {
			return nil, fmt.Errorf("cannot start the device login: %w", err)
		}
	}
	if err := req.Client.check(); err != nil {
		return nil, fmt.Errorf("cannot start the device login: %w", err)
	}
	cfg, opts := req.Client.deviceConfig(md, req.Scopes), []oauth2.AuthCodeOption{}
	if req.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", req.Resource))
	}
	authOpts := opts
	if req.Client.method() == AuthMethodClientSecretPost {
		authOpts = append(authOpts, oauth2.SetAuthURLParam("client_secret", req.Client.Secret))
	}
	start := time.Now()
	da, err := cfg.DeviceAuth(req.Client.deviceAuthContext(ctx, hc, md.DeviceAuthorizationEndpoint), authOpts...)
	if err != nil {
		return nil, fmt.Errorf("cannot start the device login: %w", retrieveError(err))
	}
	if da.DeviceCode == "" || da.UserCode == "" || da.VerificationURI == "" {
		return nil, errors.New("cannot start the device login: the answer lacks device_code, user_code or verification_uri")
	}
	if _, err := checkURL("verification_uri", da.VerificationURI); err != nil {
		return nil, fmt.Errorf("cannot start the device login: %w", err)
	}
	if da.VerificationURIComplete != "" {
		if _, err := checkURL("verification_uri_complete", da.VerificationURIComplete); err != nil {
			return nil, fmt.Errorf("cannot start the device login: %w", err)
		}
	}
	saneDeviceAuth(da, start)
	req.ShowCode(DeviceCodePrompt{UserCode: da.UserCode, VerificationURI: da.VerificationURI,
		VerificationURIComplete: da.VerificationURIComplete, Expiry: da.Expiry})

	poll := *cfg
	poll.Scopes = nil // a token poll carries no scope (RFC 8628 §3.4)
	g := bounded(hc)
	if req.Client.DPoP != nil {
		g.Transport = &dpopPolls{next: g.Transport, endpoint: md.TokenEndpoint, key: req.Client.DPoP, nonce: req.Client.dpopNonce}
	}
	answer := &tokenAnswer{next: g.Transport, endpoint: md.TokenEndpoint}
	g.Transport = answer
	_, err = poll.DeviceAccessToken(context.WithValue(ctx, oauth2.HTTPClient, g), da, opts...)
	var re *oauth2.RetrieveError
	if answer.resp == nil || errors.As(err, &re) {
		return nil, pollError(ctx, err)
	}
	// A token was issued (whether or not x/oauth2 could read it).
	return readTokenOf(md.TokenEndpoint, answer.resp, answer.body, req.Scopes, req.Client.DPoP != nil)
}

// dpopPolls adds a fresh DPoP proof (RFC 9449 §5) to each token poll, with
// the server's latest DPoP-Nonce, and sends a poll once more when the
// server answers use_dpop_nonce with a new nonce (§8).
type dpopPolls struct {
	next     http.RoundTripper
	endpoint string
	key      *wire.DPoPKey
	nonce    string
}

func (d *dpopPolls) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.URL.String() != d.endpoint {
		return d.roundTrip(r)
	}
	resp, err := d.send(r)
	if err != nil || resp.StatusCode != http.StatusBadRequest || resp.Header.Get(wire.HeaderDPoPNonce) == "" || r.GetBody == nil {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodySize))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var oe *wire.OAuthError
	if !errors.As(oauthError(resp, body), &oe) || oe.Code != wire.ErrUseDPoPNonce {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	again := r.Clone(r.Context())
	if again.Body, err = r.GetBody(); err != nil {
		return nil, err
	}
	return d.send(again)
}

// send sends a poll with a new proof and keeps the nonce of its answer.
func (d *dpopPolls) send(r *http.Request) (*http.Response, error) {
	proof, err := d.key.Proof(http.MethodPost, d.endpoint, "", d.nonce, time.Now())
	if err != nil {
		return nil, fmt.Errorf("cannot make a DPoP proof: %w", err)
	}
	r = r.Clone(r.Context())
	r.Header.Set(wire.HeaderDPoP, proof)
	resp, err := d.roundTrip(r)
	if err == nil && resp.Header.Get(wire.HeaderDPoPNonce) != "" {
		d.nonce = resp.Header.Get(wire.HeaderDPoPNonce)
	}
	return resp, err
}

func (d *dpopPolls) roundTrip(r *http.Request) (*http.Response, error) {
	if d.next == nil {
		return http.DefaultTransport.RoundTrip(r)
	}
	return d.next.RoundTrip(r)
}

// tokenAnswer keeps the 200 answer of the token endpoint for readTokenOf.
type tokenAnswer struct {
	next     http.RoundTripper
	endpoint string
	resp     *http.Response
	body     []byte
}

func (a *tokenAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	next := a.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK || r.URL.String() != a.endpoint {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodySize))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	a.resp, a.body = resp, body
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// saneDeviceAuth bounds the numbers x/oauth2 read from the device
// authorization answer received after start, so that an absurd one can
// neither overflow into the past (ending the login at once) nor stop the
// polling ticker: an expiry in the past or beyond MaxTokenLifetime becomes
// MaxTokenLifetime; a negative interval is none (5 s), one beyond
// MaxTokenLifetime is MaxTokenLifetime.
func saneDeviceAuth(da *oauth2.DeviceAuthResponse, start time.Time) {
	if !da.Expiry.IsZero() && (da.Expiry.Before(start) || da.Expiry.After(start.Add(MaxTokenLifetime))) {
		da.Expiry = start.Add(MaxTokenLifetime)
	}
	switch longest := int64(MaxTokenLifetime / time.Second); {
	case da.Interval < 0:
		da.Interval = 0
	case da.Interval > longest:
		da.Interval = longest
	}
}

// pollError reads the error that ended DeviceAccessToken's polling (RFC
// 8628 §3.5).
func pollError(ctx context.Context, err error) error {
	var re *oauth2.RetrieveError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("device login cancelled: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return ErrDeviceCodeExpired // the codes' lifetime (expires_in) is over
	case errors.As(err, &re) && re.ErrorCode == "expired_token":
		return ErrDeviceCodeExpired
	case errors.As(err, &re) && re.ErrorCode == "access_denied":
		return fmt.Errorf("%w: %w", ErrAccessDenied, retrieveError(err))
	}
	return fmt.Errorf("cannot get a token for the device login: %w", retrieveError(err))
}

// retrieveError makes an x/oauth2 error answer ours: the RFC 6749 §5.2
// error (grantError), without x/oauth2's quoting of the whole body.
func retrieveError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		return grantError(oauthError(re.Response, re.Body))
	}
	return err
}

// deviceConfig is the x/oauth2 view of the client for the device grant,
// with the client authentication of its token polls (RFC 6749 §2.3.1).
func (c Client) deviceConfig(md *wire.AuthServerMetadata, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if c.method() == AuthMethodClientSecretBasic {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, Scopes: scopes, Endpoint: oauth2.Endpoint{
		DeviceAuthURL: md.DeviceAuthorizationEndpoint, TokenURL: md.TokenEndpoint, AuthStyle: style}}
}

// deviceAuthContext carries the HTTP client for DeviceAuth: guarded, and
// for client_secret_basic adding HTTP Basic to the device authorization
// request, which x/oauth2 sends with client_id alone.
func (c Client) deviceAuthContext(ctx context.Context, hc *http.Client, endpoint string) context.Context {
	g := bounded(hc)
	if c.method() == AuthMethodClientSecretBasic {
		g.Transport = basicAuth{next: g.Transport, endpoint: endpoint, id: c.ID, secret: c.Secret}
	}
	return context.WithValue(ctx, oauth2.HTTPClient, g)
}

// bounded is the guarded HTTP client for x/oauth2, each request within
// DefaultFetchTimeout like every other request of flows.
func bounded(hc *http.Client) *http.Client {
	g := guard(hc)
	if g.Timeout == 0 || g.Timeout > DefaultFetchTimeout {
		g.Timeout = DefaultFetchTimeout
	}
	return g
}

// basicAuth adds client_secret_basic (RFC 6749 §2.3.1: the form-urlencoded
// id and secret) to POSTs to endpoint.
type basicAuth struct {
	next       http.RoundTripper
	endpoint   string
	id, secret string
}

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	next := b.next
	if next == nil {
		next = http.DefaultTransport
	}
	if r.Method == http.MethodPost && r.URL.String() == b.endpoint {
		r = r.Clone(r.Context())
		r.SetBasicAuth(url.QueryEscape(b.id), url.QueryEscape(b.secret))
	}
	return next.RoundTrip(r)
}
