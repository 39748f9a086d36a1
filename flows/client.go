package flows

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/wire"
)

// Client authentication methods (RFC 7591 §2, RFC 6749 §2.3.1).
const (
	AuthMethodNone              = "none"
	AuthMethodClientSecretBasic = "client_secret_basic"
	AuthMethodClientSecretPost  = "client_secret_post"
	// AuthMethodPrivateKeyJWT signs a JWT client assertion with the
	// client's private key (RFC 7523 §2.2; OpenID Connect Core §9).
	AuthMethodPrivateKeyJWT = "private_key_jwt"
)

// Client is an OAuth client as the token, revocation and device
// authorization endpoints see it.
type Client struct {
	ID string
	// Secret is empty for a public client.
	Secret string
	// AuthMethod is one of the AuthMethod constants; empty means
	// client_secret_basic with a secret, none without.
	AuthMethod string
	// PrivateKey is the PEM private key of a private_key_jwt client, and
	// Audience the authorization server's issuer, the assertion's aud.
	PrivateKey string
	Audience   string
	// DPoP, when set, proves possession of this key on token requests
	// (RFC 9449 §5); dpopNonce is the server's nonce (§8).
	DPoP      *wire.DPoPKey
	dpopNonce string
}

// ChooseAuthMethod picks how a client authenticates to the token endpoint
// from the authorization server's token_endpoint_auth_methods_supported:
// a public client (no secret) uses none; a confidential one prefers
// client_secret_basic, then client_secret_post. An absent list means
// client_secret_basic (RFC 8414 §2).
func ChooseAuthMethod(supported []string, hasSecret bool) (string, error) {
	if !hasSecret {
		return AuthMethodNone, nil
	}
	if len(supported) == 0 {
		return AuthMethodClientSecretBasic, nil
	}
	for _, m := range []string{AuthMethodClientSecretBasic, AuthMethodClientSecretPost} {
		if slices.Contains(supported, m) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: it accepts %s, agentauth sends a client secret with %s or %s",
		ErrNoAuthMethod, strings.Join(supported, ", "), AuthMethodClientSecretBasic, AuthMethodClientSecretPost)
}

func (c Client) method() string {
	switch {
	case c.AuthMethod != "":
		return c.AuthMethod
	case c.Secret != "":
		return AuthMethodClientSecretBasic
	}
	return AuthMethodNone
}

func (c Client) check() error {
	if c.ID == "" {
		return fmt.Errorf("no client id")
	}
	switch m := c.method(); m {
	case AuthMethodNone:
	case AuthMethodClientSecretBasic, AuthMethodClientSecretPost:
		if c.Secret == "" {
			return fmt.Errorf("client authentication %s needs a client secret", m)
		}
	case AuthMethodPrivateKeyJWT:
		if c.PrivateKey == "" {
			return fmt.Errorf("client authentication %s needs a private key", m)
		}
	default:
		return fmt.Errorf("client authentication %q is not supported (only %s, %s, %s, %s)",
			m, AuthMethodNone, AuthMethodClientSecretBasic, AuthMethodClientSecretPost, AuthMethodPrivateKeyJWT)
	}
	return nil
}

// newRequest builds a POST of form to an OAuth endpoint carrying the
// client's credentials: client_secret_basic is HTTP Basic over the
// form-urlencoded id and secret (RFC 6749 §2.3.1); client_secret_post puts
// both in the form; none sends client_id alone; private_key_jwt adds a
// signed client assertion (RFC 7523 §2.2) to client_id.
func (c Client) newRequest(endpoint string, form url.Values) (*http.Request, error) {
	form = maps.Clone(form)
	if form == nil {
		form = url.Values{}
	}
	method := c.method()
	if method != AuthMethodClientSecretBasic {
		form.Set("client_id", c.ID)
	}
	switch method {
	case AuthMethodClientSecretPost:
		form.Set("client_secret", c.Secret)
	case AuthMethodPrivateKeyJWT:
		assertion, err := clientAssertion(c, time.Now())
		if err != nil {
			return nil, err
		}
		form.Set("client_assertion_type", ClientAssertionType)
		form.Set("client_assertion", assertion)
	}
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	if method == AuthMethodClientSecretBasic {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.DPoP != nil {
		proof, err := c.DPoP.Proof(http.MethodPost, endpoint, "", c.dpopNonce, time.Now())
		if err != nil {
			return nil, err
		}
		req.Header.Set(wire.HeaderDPoP, proof)
	}
	return req, nil
}

// oauth2Config is the x/oauth2 view of the client, for building the
// authorization request URL (the code exchange is requestToken's).
func (c Client) oauth2Config(authURL, redirectURL string, scopes []string) *oauth2.Config {
	return &oauth2.Config{ClientID: c.ID, RedirectURL: redirectURL, Scopes: scopes, Endpoint: oauth2.Endpoint{AuthURL: authURL}}
}
