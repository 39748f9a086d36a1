package flows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

func TestDeviceCode(t *testing.T) {
	tests := []struct {
		name    string
		polls   []string
		wantErr error
	}{
		{"pending then approved", []string{"authorization_pending", "authorization_pending", ""}, nil},
		{"slow_down then approved", []string{"slow_down", "authorization_pending", ""}, nil},
		{"expired", []string{"authorization_pending", "expired_token"}, ErrDeviceCodeExpired},
		{"denied", []string{"access_denied"}, ErrAccessDenied},
		{"invalid client", []string{"invalid_client"}, ErrInvalidClient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.devicePolls = append([]string(nil), tt.polls...)
			var prompts []DeviceCodePrompt
			tok, err := DeviceCode(context.Background(), nil, DeviceRequest{
				Metadata: &as.md, Client: Client{ID: "pub"}, Scopes: []string{"agent:use"},
				Resource: "http://127.0.0.1:7777/mcp", Interval: time.Millisecond,
				ShowCode: func(p DeviceCodePrompt) { prompts = append(prompts, p) },
			})
			if len(prompts) != 1 {
				t.Fatalf("ShowCode called %d times", len(prompts))
			}
			p := prompts[0]
			if p.UserCode != "WDJB-MJHT" || p.VerificationURI != as.srv.URL+"/activate" ||
				p.VerificationURIComplete != as.srv.URL+"/activate?user_code=WDJB-MJHT" || p.Expiry.IsZero() {
				t.Errorf("prompt = %+v", p)
			}
			if f := as.deviceForm; f.Get("client_id") != "pub" || f.Get("scope") != "agent:use" || f.Get("resource") != "http://127.0.0.1:7777/mcp" {
				t.Errorf("device authorization request = %v", f)
			}
			if len(as.tokenForms) != len(tt.polls) {
				t.Errorf("%d token polls, want %d", len(as.tokenForms), len(tt.polls))
			}
			for _, f := range as.tokenForms {
				if f.Get("grant_type") != wire.GrantDeviceCode || f.Get("device_code") != "dev-code-secret" ||
					f.Get("client_id") != "pub" || f.Get("resource") != "http://127.0.0.1:7777/mcp" {
					t.Errorf("token poll = %v", f)
				}
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v is not %v", err, tt.wantErr)
				}
				noSecrets(t, err)
				return
			}
			if err != nil {
				t.Fatalf("DeviceCode: %v", err)
			}
			if tok.AccessToken != "at-secret-1" || strings.Join(tok.Scopes, " ") != "agent:use" {
				t.Errorf("token = %s", tok)
			}
		})
	}
}

func TestDeviceCodeRefusals(t *testing.T) {
	as := newFakeAS(t)
	noDevice := as.md
	noDevice.DeviceAuthorizationEndpoint = ""
	for name, req := range map[string]DeviceRequest{
		"no device endpoint": {Metadata: &noDevice, Client: Client{ID: "pub"}, ShowCode: func(DeviceCodePrompt) {}},
		"no ShowCode":        {Metadata: &as.md, Client: Client{ID: "pub"}},
		"no metadata":        {Client: Client{ID: "pub"}, ShowCode: func(DeviceCodePrompt) {}},
	} {
		if _, err := DeviceCode(context.Background(), nil, req); err == nil {
			t.Errorf("%s: DeviceCode succeeded", name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	as.devicePolls = []string{"authorization_pending", "authorization_pending", "authorization_pending"}
	_, err := DeviceCode(ctx, nil, DeviceRequest{Metadata: &as.md, Client: Client{ID: "pub"}, Interval: time.Hour,
		ShowCode: func(DeviceCodePrompt) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled device login: %v", err)
	}
}

// The polling policy of RFC 8628 §3.5, with the 5 s default step.
func TestNextPoll(t *testing.T) {
	const step = DefaultPollInterval
	tests := []struct {
		code     string
		interval time.Duration
		wantErr  error
	}{
		{"authorization_pending", 5 * time.Second, nil},
		{"slow_down", 10 * time.Second, nil},
		{"expired_token", 0, ErrDeviceCodeExpired},
		{"access_denied", 0, ErrAccessDenied},
		{"invalid_grant", 0, ErrInvalidGrant},
	}
	for _, tt := range tests {
		got, err := nextPoll(5*time.Second, step, grantError(&wire.OAuthError{Code: tt.code}))
		if got != tt.interval || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("%s: next %v, %v; want %v, %v", tt.code, got, err, tt.interval, tt.wantErr)
		}
	}
	if _, err := nextPoll(time.Second, step, errors.New("connection refused")); err == nil {
		t.Error("a network error does not end polling")
	}
}

func TestPollInterval(t *testing.T) {
	for given, want := range map[json.Number]time.Duration{
		"": DefaultPollInterval, "3": 3 * time.Second, "0": DefaultPollInterval, "-2": DefaultPollInterval, "1.5": DefaultPollInterval,
	} {
		if got := pollInterval(given); got != want {
			t.Errorf("pollInterval(%q) = %v, want %v", given, got, want)
		}
	}
}
