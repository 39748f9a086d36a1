package flows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// TestDeviceCode runs the device grant (on x/oauth2) against a fake
// authorization server, which asserts the polling policy of RFC 8628 §3.2
// and §3.5 from the times it saw the requests at: the interval it gave (or
// 5 s when it gave none) between polls, 5 s more after each slow_down; and resource on the device authorization request
// and on every poll. The subtests run in parallel: they wait on the clock.
func TestDeviceCode(t *testing.T) {
	tests := []struct {
		name     string
		interval int // seconds; 0: the answer has none
		polls    []string
		// after is the least time from the device authorization request
		// to each poll (x/oauth2 polls on a ticker).
		after   []time.Duration
		wantErr error
	}{
		{"pending then approved", 1, []string{"authorization_pending", ""}, []time.Duration{time.Second, 2 * time.Second}, nil},
		{"no interval: 5 s", 0, []string{""}, []time.Duration{5 * time.Second}, nil},
		{"slow_down adds 5 s", 1, []string{"slow_down", ""}, []time.Duration{time.Second, 7 * time.Second}, nil},
		{"expired", 1, []string{"authorization_pending", "expired_token"}, nil, ErrDeviceCodeExpired},
		{"denied", 1, []string{"access_denied"}, nil, ErrAccessDenied},
		{"invalid client", 1, []string{"invalid_client"}, nil, ErrInvalidClient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as := newFakeAS(t)
			as.devicePolls = append([]string(nil), tt.polls...)
			as.deviceInterval = tt.interval
			var prompts []DeviceCodePrompt
			tok, err := DeviceCode(context.Background(), nil, DeviceRequest{
				Metadata: &as.md, Client: Client{ID: "pub"}, Scopes: []string{"agent:use"},
				Resource: "http://127.0.0.1:7777/mcp",
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
			for i, least := range tt.after {
				if got := as.pollAt[i].Sub(as.deviceAt); got < least {
					t.Errorf("poll %d came %v after the device authorization request, want at least %v", i+1, got, least)
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
	_, err := DeviceCode(ctx, nil, DeviceRequest{Metadata: &as.md, Client: Client{ID: "pub"},
		ShowCode: func(DeviceCodePrompt) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled device login: %v", err)
	}
}
