package server

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/issuer"
)

// embeddedLogin decides how the embedded issuer signs users in: at the
// config's login provider, or with the development "Sign in as" box
// (--dev-login; by default when no login is configured), which signs
// anyone in without a password and so is refused on a listener that is
// not loopback. It returns the provider's options, or nil for the box.
func embeddedLogin(opts *Options, cfg *host.Config, loopback bool, hc *http.Client) (*issuer.LoginOptions, error) {
	l := cfg.Login
	switch {
	case l != nil && opts.DevLogin != nil && *opts.DevLogin:
		return nil, usagef("--dev-login and the config's login exclude each other: the login provider signs users in")
	case l != nil && slices.Contains(opts.IssuerFlags, "--dev-user"):
		return nil, usagef("--dev-user names the development box's user, and the config's login signs users in at its provider")
	case l == nil && opts.DevLogin != nil && !*opts.DevLogin:
		return nil, usagef("--dev-login=false leaves the embedded issuer no way to sign users in\nConfigure an OpenID Provider under \"login\" in the --config file")
	case l == nil && !loopback:
		return nil, fmt.Errorf("cannot run the embedded issuer on %s: it signs anyone in without a password, so it listens on loopback only\nUse --listen 127.0.0.1:PORT, or trust an external authorization server with --issuer, or sign users in at an OpenID Provider (\"login\" in the --config file)", opts.Listen)
	case l == nil:
		return nil, nil
	}
	secret, err := readLoginSecret(l)
	if err != nil {
		return nil, err
	}
	return &issuer.LoginOptions{Issuer: l.Issuer, ClientID: l.ClientID, ClientSecret: secret, Scopes: l.Scopes,
		SubjectClaim: l.SubjectClaim, GroupsClaim: l.GroupsClaim, AllowUsers: l.Allow.Users,
		AllowEmailDomains: l.Allow.EmailDomains, AllowGroups: l.Allow.Groups, HTTPClient: hc}, nil
}

// readLoginSecret reads the login client's secret from its file or
// environment variable.
func readLoginSecret(l *host.Login) (string, error) {
	s, err := readClientSecret(l.ClientSecretFile, l.ClientSecretEnv)
	if err != nil {
		return "", fmt.Errorf("invalid config: login: %w", err)
	}
	return s, nil
}

// readClientSecret reads a client's secret (the login's, an upstream's)
// from file when it is set, else from the environment variable env: a
// file that cannot be read or is empty, or a variable that is not set,
// is an error naming the config key (serve --check finds it too).
func readClientSecret(file, env string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("cannot read clientSecretFile: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("clientSecretFile %s is empty", file)
		}
		return s, nil
	}
	s := os.Getenv(env)
	if s == "" {
		return "", fmt.Errorf("clientSecretEnv: $%s is not set or empty", env)
	}
	return s, nil
}
