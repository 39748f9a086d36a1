package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// TestLoginTarget logs in without the CLI: discovery of the fake's /mcp,
// dynamic registration, the authorization code grant through the fake
// browser (the opener), the credential stored and reported to the UI.
func TestLoginTarget(t *testing.T) {
	as := oauthfake.New(t)
	cl, st, ui := newTestClient(t)
	creds, got, err := cl.LoginTarget(context.Background(), TargetLogin{Target: as.Resource(), Choices: Choices{CallbackHost: "127.0.0.1"}})
	if err != nil {
		t.Fatalf("LoginTarget: %v", err)
	}
	if got != st || len(creds) != 1 {
		t.Fatalf("got %d credentials in %v", len(creds), got)
	}
	c, err := st.Get(context.Background(), creds[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	if c.Resource != as.Resource() || c.Issuer != as.URL || c.Subject != "alice" || c.Client.ClientID != "dcr-1" ||
		c.Client.Source != clientSourceDCR || c.TokenEndpoint != as.Metadata.TokenEndpoint || c.RefreshToken == "" {
		t.Errorf("stored %+v", c)
	}
	if q := as.AuthorizeQuery[0]; q.Get("resource") != as.Resource() || q.Get("code_challenge_method") != "S256" {
		t.Errorf("authorization request %v", q)
	}
	if f := as.FormsWith(wire.GrantAuthorizationCode); len(f) != 1 || f[0].Get("resource") != as.Resource() || f[0].Get("code_verifier") == "" {
		t.Errorf("code exchange %v", f)
	}
	want := []string{"auth url " + as.URL + "/authorize?", "logged in to " + as.Resource()}
	if len(ui.lines) != len(want) {
		t.Fatalf("UI got %q", ui.lines)
	}
	for i, w := range want {
		if !strings.HasPrefix(ui.lines[i], w) {
			t.Errorf("UI line %d %q, want %q…", i, ui.lines[i], w)
		}
	}
}

// TestLoginDevice: the device grant (x/oauth2) with the code shown by the
// UI, no browser, and resource on the device request's polls.
func TestLoginDevice(t *testing.T) {
	as := oauthfake.New(t)
	as.DeviceOK = true
	cl, _, ui := newTestClient(t)
	if _, _, err := cl.LoginTarget(context.Background(), TargetLogin{Target: as.Resource(), Choices: Choices{Device: true, NoBrowser: true}}); err != nil {
		t.Fatalf("LoginTarget: %v", err)
	}
	if ui.lines[0] != "device code WDJB-MJHT at "+as.URL+"/activate" {
		t.Errorf("UI got %q", ui.lines)
	}
	polls := as.FormsWith(wire.GrantDeviceCode)
	if len(polls) != 1 || polls[0].Get("resource") != as.Resource() || polls[0].Get("device_code") != "dev-code-secret" {
		t.Errorf("device polls %v", polls)
	}
}

// TestLoginStaleRegistration: a stored registration the server no longer
// knows (invalid_client) is marked rejected, and the login registers again,
// once, with a warning.
func TestLoginStaleRegistration(t *testing.T) {
	as := oauthfake.New(t)
	cl, st, ui := newTestClient(t)
	ctx := context.Background()
	if err := store.PutRegistration(ctx, st, as.URL, store.ClientRegistration{ClientID: "forgotten", AuthMethod: "none", Source: clientSourceDCR}); err != nil {
		t.Fatal(err)
	}
	creds, _, err := cl.LoginTarget(ctx, TargetLogin{Target: as.Resource()})
	if err != nil {
		t.Fatalf("LoginTarget: %v", err)
	}
	if creds[0].Client.ClientID != "dcr-1" || as.Registered != 1 {
		t.Errorf("client %q after %d registrations; want dcr-1 after 1", creds[0].Client.ClientID, as.Registered)
	}
	if reg, found := store.FindRegistration(ctx, st, as.URL); !found || reg.ClientID != "dcr-1" {
		t.Errorf("stored registration %+v, %v; want dcr-1", reg, found)
	}
	if !strings.Contains(strings.Join(ui.lines, "\n"), "warning: "+as.URL+" no longer accepts the stored client forgotten") {
		t.Errorf("UI got %q", ui.lines)
	}
}

// TestLoginCrossOrigin: a requirement whose resource is on another origin
// than the target is refused before any request, unless allowed.
func TestLoginCrossOrigin(t *testing.T) {
	as := oauthfake.New(t)
	cl, _, _ := newTestClient(t)
	r := &RequirementInfo{Requirement: wire.Requirement{Resource: as.Resource(), Required: true}, AuthServer: &as.Metadata}
	_, err := cl.Login(context.Background(), LoginRequest{Target: "ws://127.0.0.2:1", Requirement: r})
	var ae *AuthError
	if !errors.As(err, &ae) || !errors.As(err, new(*crossOriginError)) || !strings.Contains(ae.Hint, "--allow-resource "+as.Resource()) {
		t.Fatalf("Login = %v, want a cross-origin refusal with the --allow-resource hint", err)
	}
	if as.Hits != 0 {
		t.Errorf("%d requests before the refusal", as.Hits)
	}
	c, err := cl.Login(context.Background(), LoginRequest{Target: "ws://127.0.0.2:1", Requirement: r, Choices: Choices{AllowResources: []string{as.Resource()}}})
	if err != nil || len(c.AllowedTargets) != 1 || c.AllowedTargets[0] != "http://127.0.0.2:1" {
		t.Fatalf("allowed Login = %+v, %v", c, err)
	}
}

// TestConcurrentLoginsRegisterOnce: 20 logins to one issuer at once, each
// with its own handle on one file store (as 20 processes would be), make
// one dynamic registration, and every login uses it.
func TestConcurrentLoginsRegisterOnce(t *testing.T) {
	as := oauthfake.New(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		cl, _, _ := newTestClient(t)
		st, err := store.Open(store.KindFile, dir)
		if err != nil {
			t.Fatal(err)
		}
		cl.Store = func() (store.Store, error) { return st, nil }
		wg.Go(func() { _, _, errs[i] = cl.LoginTarget(context.Background(), TargetLogin{Target: as.Resource()}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("login %d: %v", i, err)
		}
	}
	if as.Registered != 1 {
		t.Errorf("%d registrations, want 1", as.Registered)
	}
}

// TestRegistrationOutlivesFailedLogin: a login the user denies leaves its
// registration for the next login, which registers nothing.
func TestRegistrationOutlivesFailedLogin(t *testing.T) {
	as := oauthfake.New(t)
	cl, _, _ := newTestClient(t)
	as.AuthError = "access_denied"
	var ae *AuthError
	if _, _, err := cl.LoginTarget(context.Background(), TargetLogin{Target: as.Resource()}); !errors.As(err, &ae) {
		t.Fatalf("denied login: %v, want an *AuthError", err)
	}
	as.AuthError = ""
	creds, _, err := cl.LoginTarget(context.Background(), TargetLogin{Target: as.Resource()})
	if err != nil {
		t.Fatalf("second login: %v", err)
	}
	if as.Registered != 1 || creds[0].Client.ClientID != "dcr-1" {
		t.Errorf("%d registrations, client %q; want 1, dcr-1", as.Registered, creds[0].Client.ClientID)
	}
}
