package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// The device authorization request and the token polling are written here
// rather than with github.com/cli/oauth's device package: its RequestCode
// fails when the optional interval is absent (RFC 8628 §3.2 makes it
// optional), cannot authenticate a confidential client with HTTP Basic, and
// folds 400/401/403 answers into one "unsupported" error; its polling, like
// x/oauth2's DeviceAccessToken, cannot send the RFC 8707 resource parameter
// and waits in whole seconds.

// DefaultPollInterval is the device flow's polling interval when the AS
// gives none, and the slow_down increment (RFC 8628 §3.2, §3.5).
const DefaultPollInterval = 5 * time.Second

// DeviceRequest is a device authorization grant (RFC 8628).
type DeviceRequest struct {
	// Metadata gives the device_authorization_endpoint and token_endpoint.
	Metadata *wire.AuthServerMetadata
	Client   Client
	Scopes   []string
	// Resource is sent, exactly as given, as the RFC 8707 resource indicator
	// on the device authorization and token requests; empty leaves it out.
	Resource string
	// ShowCode receives what the user must see; it is called once, before
	// polling starts, and must not block.
	ShowCode func(DeviceCodePrompt)
	// Interval, when set, replaces both the AS's polling interval and the
	// slow_down increment (tests poll every millisecond).
	Interval time.Duration
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

type deviceAuthResponse struct {
	DeviceCode              string      `json:"device_code"`
	UserCode                string      `json:"user_code"`
	VerificationURI         string      `json:"verification_uri"`
	VerificationURL         string      `json:"verification_url"` // the misspelling some servers use
	VerificationURIComplete string      `json:"verification_uri_complete"`
	ExpiresIn               json.Number `json:"expires_in"`
	Interval                json.Number `json:"interval"`
}

// DeviceCode runs the device authorization grant: the device authorization
// request (RFC 8628 §3.1, with client authentication, scope and resource),
// ShowCode, then token polls (§3.4) every interval (DefaultPollInterval
// when the AS gives none), 5 s slower after each slow_down (§3.5), until a
// token, ErrDeviceCodeExpired (expired_token, or the codes' lifetime is
// over), ErrAccessDenied (access_denied) or another error.
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
	form := url.Values{}
	if len(req.Scopes) > 0 {
		form.Set("scope", wire.JoinScope(req.Scopes))
	}
	if req.Resource != "" {
		form.Set("resource", req.Resource)
	}
	resp, body, err := postForm(ctx, hc, "device_authorization_endpoint", md.DeviceAuthorizationEndpoint, req.Client, form)
	if err != nil {
		return nil, fmt.Errorf("cannot start the device login: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cannot start the device login: %w", grantError(oauthError(resp, body)))
	}
	var da deviceAuthResponse
	if err := json.Unmarshal(body, &da); err != nil {
		return nil, fmt.Errorf("cannot read the device authorization response: %w", err)
	}
	if da.VerificationURI == "" {
		da.VerificationURI = da.VerificationURL
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
	interval, step := pollInterval(da.Interval), DefaultPollInterval
	if req.Interval > 0 {
		interval, step = req.Interval, req.Interval
	}
	prompt := DeviceCodePrompt{UserCode: da.UserCode, VerificationURI: da.VerificationURI, VerificationURIComplete: da.VerificationURIComplete}
	var expired <-chan time.Time
	if n, err := strconv.Atoi(da.ExpiresIn.String()); err == nil && n > 0 {
		lifetime := seconds(n)
		prompt.Expiry = time.Now().Add(lifetime)
		t := time.NewTimer(lifetime)
		defer t.Stop()
		expired = t.C
	}
	req.ShowCode(prompt)

	poll := url.Values{"grant_type": {wire.GrantDeviceCode}, "device_code": {da.DeviceCode}}
	if req.Resource != "" {
		poll.Set("resource", req.Resource)
	}
	for {
		wait := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil, fmt.Errorf("device login cancelled: %w", ctx.Err())
		case <-expired:
			wait.Stop()
			return nil, ErrDeviceCodeExpired
		case <-wait.C:
		}
		tok, err := requestToken(ctx, hc, md.TokenEndpoint, req.Client, poll, req.Scopes)
		if err == nil {
			return tok, nil
		}
		if interval, err = nextPoll(interval, step, err); err != nil {
			return nil, err
		}
	}
}

// pollInterval is the device authorization response's interval, or
// DefaultPollInterval when it gives none (RFC 8628 §3.2).
func pollInterval(interval json.Number) time.Duration {
	if n, err := strconv.Atoi(interval.String()); err == nil && n > 0 {
		return seconds(n)
	}
	return DefaultPollInterval
}

// seconds is n > 0 seconds, capped at MaxTokenLifetime so that an absurd
// number from the authorization server cannot overflow into the past.
func seconds(n int) time.Duration {
	if n >= int(MaxTokenLifetime/time.Second) {
		return MaxTokenLifetime
	}
	return time.Duration(n) * time.Second
}

// nextPoll reads a device token poll's error (RFC 8628 §3.5): keep polling
// after the returned interval, or stop with the returned error.
func nextPoll(interval, step time.Duration, err error) (time.Duration, error) {
	var oe *wire.OAuthError
	if errors.As(err, &oe) {
		switch oe.Code {
		case "authorization_pending":
			return interval, nil
		case "slow_down":
			return interval + step, nil
		case "expired_token":
			return 0, ErrDeviceCodeExpired
		case "access_denied":
			return 0, fmt.Errorf("%w: %w", ErrAccessDenied, oe)
		}
	}
	return 0, fmt.Errorf("cannot get a token for the device login: %w", err)
}
