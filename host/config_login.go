package host

import (
	"errors"
	"fmt"
	"net"
	"net/url"
)

// Login is the config's "login": the OpenID Provider at which serve's
// embedded issuer signs users in (docs/production.md, "Sign-in"), instead of the
// development "Sign in as" box. Its key names are part of the user
// contract.
type Login struct {
	// Issuer is the provider's issuer identifier (https, or http on
	// loopback); its metadata is discovered (OIDC Discovery §4).
	Issuer   string `json:"issuer"`
	ClientID string `json:"clientId"`
	// The client secret, from a file (trimmed) or an environment
	// variable: exactly one.
	ClientSecretFile string `json:"clientSecretFile"`
	ClientSecretEnv  string `json:"clientSecretEnv"`
	// Scopes asked for (openid is always added); default openid email
	// profile.
	Scopes []string `json:"scopes"`
	// SubjectClaim names the ID token claim that becomes the subject of
	// serve's tokens; default: the provider's iss and sub, "ISS#SUB".
	SubjectClaim string `json:"subjectClaim"`
	// GroupsClaim names the claim listing the user's groups (default
	// "groups").
	GroupsClaim string     `json:"groupsClaim"`
	Allow       LoginAllow `json:"allow"`
}

// LoginAllow are the login's allow-lists: with none, every user the
// provider signs in is let in; with any, a user must match one entry.
type LoginAllow struct {
	// Users are subjects (as serve names them) or verified e-mail
	// addresses.
	Users []string `json:"users"`
	// EmailDomains are domains of verified e-mail addresses.
	EmailDomains []string `json:"emailDomains"`
	Groups       []string `json:"groups"`
}

func (l *Login) check() error {
	u, err := url.Parse(l.Issuer)
	switch {
	case l.Issuer == "":
		return errors.New("issuer: missing (the OpenID Provider's issuer identifier)")
	case err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("issuer: %q is not an issuer identifier (an https URL without query or fragment)", l.Issuer)
	case u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())):
		return fmt.Errorf("issuer: %q must use https (http is allowed on loopback only)", l.Issuer)
	case l.ClientID == "":
		return errors.New("clientId: missing (register serve at the provider with the redirect URI ISSUER/login/callback)")
	case (l.ClientSecretFile == "") == (l.ClientSecretEnv == ""):
		return errors.New("clientSecretFile: give exactly one of clientSecretFile and clientSecretEnv")
	}
	return nil
}

// loopbackHost reports "localhost" or a loopback IP literal.
func loopbackHost(h string) bool {
	ip := net.ParseIP(h)
	return h == "localhost" || ip != nil && ip.IsLoopback()
}
