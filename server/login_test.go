package server

import (
	"strings"
	"testing"

	"github.com/agentauth/agentauth/host"
)

// embeddedLogin: the development box stays on loopback, a login provider
// may listen anywhere, and the two exclude each other.
func TestEmbeddedLogin(t *testing.T) {
	t.Setenv("AGENTAUTH_TEST_LOGIN_SECRET", "s3cret")
	login := &host.Login{Issuer: "https://id.example", ClientID: "serve", ClientSecretEnv: "AGENTAUTH_TEST_LOGIN_SECRET"}
	yes, no := true, false
	for _, tc := range []struct {
		name     string
		login    *host.Login
		devLogin *bool
		flags    []string
		loopback bool
		provider bool   // a provider's options are returned
		err      string // "" for none
	}{
		{"dev box on loopback by default", nil, nil, nil, true, false, ""},
		{"dev box refused beyond loopback", nil, nil, nil, false, false, "listens on loopback only"},
		{"explicit dev box refused beyond loopback", nil, &yes, nil, false, false, "listens on loopback only"},
		{"no way to sign in", nil, &no, nil, true, false, "no way to sign users in"},
		{"provider on loopback", login, nil, nil, true, true, ""},
		{"provider beyond loopback", login, nil, nil, false, true, ""},
		{"provider and --dev-login", login, &yes, nil, true, false, "exclude each other"},
		{"provider and --dev-user", login, nil, []string{"--dev-user"}, true, false, "--dev-user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &Options{Listen: "0.0.0.0:7777", DevLogin: tc.devLogin, IssuerFlags: tc.flags}
			got, err := embeddedLogin(opts, &host.Config{Login: tc.login}, tc.loopback, nil)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && (got != nil) != tc.provider:
				t.Fatalf("provider options %+v, want provider %v", got, tc.provider)
			case got != nil && got.ClientSecret != "s3cret":
				t.Fatalf("secret not read from the environment")
			}
		})
	}
}
