package client

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// ProviderGitHub labels a credential obtained with GitHub's own flow.
const ProviderGitHub = "github"

// EnvGitHubClientID holds the client id of the user's GitHub OAuth app,
// used when login has no --client-id (read by commands).
const EnvGitHubClientID = "AGENTAUTH_GITHUB_CLIENT_ID"

// gitHubUserTimeout bounds status's GET /user for each GitHub credential.
const gitHubUserTimeout = 5 * time.Second

// gitHubHostFor decides whether r's authorization server is a GitHub host,
// which has its own flow: the one named by --github-host (a host name, or
// an origin URL), else github.com or a *.ghe.com tenant recognised by URL,
// else, when discovery found no metadata document, a server whose URL is an
// origin's /login/oauth (a GitHub Enterprise Server publishes none).
func gitHubHostFor(r *RequirementInfo, flagHost string) (*flows.GitHubHost, error) {
	if len(r.AuthorizationServers) == 0 {
		return nil, nil
	}
	as := r.AuthorizationServers[0]
	var base string
	switch known, isKnown := flows.KnownGitHubHost(as); {
	case flagHost != "" && wire.SameOrigin(as, GitHubBase(flagHost)):
		base = GitHubBase(flagHost)
	case isKnown:
		base = known
	case r.AuthServer == nil && errors.Is(r.Err, flows.ErrNoAuthServerMetadata) && flows.IsGitHubIssuerPath(as):
		base = wire.Origin(as)
	}
	if base == "" {
		return nil, nil
	}
	return flows.NewGitHubHost(base)
}

// GitHubBase is the origin that --github-host names: HOST means
// https://HOST; a URL (http only to a loopback address, for a test's fake
// GitHub) stands for its origin.
func GitHubBase(flagHost string) string {
	if !strings.Contains(flagHost, "://") {
		return "https://" + strings.ToLower(flagHost)
	}
	return wire.Origin(flagHost)
}

// gitHubGrant logs in with GitHub's own flow: the device flow by default
// (cli/oauth, public client, no secret), or with Web the authorization
// code grant over the loopback redirect, with PKCE S256 and the app's
// secret (GitHub requires it at its token endpoint). The client is the
// user's OAuth app: --client-id, else $AGENTAUTH_GITHUB_CLIENT_ID. A failed
// grant is a loginError.
func (cl *Client) gitHubGrant(ctx context.Context, req LoginRequest, gh *flows.GitHubHost, scopes []string) (*flows.Token, *store.ClientRegistration, error) {
	clientID := cmp.Or(req.ClientID, req.GitHubClientID)
	if clientID == "" {
		return nil, nil, gitHubAppHelp(gh, scopes)
	}
	reg := &store.ClientRegistration{ClientID: clientID, AuthMethod: flows.AuthMethodNone, Source: clientSourcePreregistered}
	timeout := cmp.Or(req.Timeout, flows.DefaultLoginTimeout)
	if !req.Web {
		if req.ClientSecret != "" {
			cl.UI.Warn("GitHub's device flow takes no client secret; the secret is not sent.")
		}
		var open func(string) error
		if !req.NoBrowser {
			open = cl.Browser
		}
		tok, err := cl.waitDevice(ctx, open, timeout, func(ctx context.Context, show func(flows.DeviceCodePrompt)) (*flows.Token, error) {
			return flows.GitHubDevice(ctx, cl.HTTPClient, gh, clientID, scopes, show)
		})
		if err != nil {
			return nil, nil, loginError(err, req.Target, req.Requirement.SchemeID)
		}
		return tok, reg, nil
	}
	if req.ClientSecret == "" {
		return nil, nil, Usagef("cannot log in: GitHub's web flow needs the OAuth app's client secret: add --client-secret-stdin, or leave out --web to use the device flow")
	}
	reg.ClientSecret, reg.AuthMethod = req.ClientSecret, flows.AuthMethodClientSecretPost
	web := req
	web.Device = false
	// No resource: GitHub ignores RFC 8707.
	tok, err := cl.runGrant(ctx, web, gh.Metadata(req.Requirement.AuthorizationServers[0]), clientOf(*reg), scopes, "")
	if err != nil {
		return nil, nil, loginError(err, req.Target, req.Requirement.SchemeID)
	}
	return tok, reg, nil
}

// gitHubAppHelp says how to get the client id login lacks.
func gitHubAppHelp(gh *flows.GitHubHost, scopes []string) error {
	want := "none"
	if len(scopes) > 0 {
		want = strings.Join(scopes, " ")
	}
	return Usagef("cannot log in to %s: no client id for GitHub\n"+
		"Create an OAuth app at %s/settings/applications/new with the Authorization callback URL http://127.0.0.1/callback "+
		"and Enable Device Flow ticked (scopes requested: %s), then run: agentauth login --client-id ID TARGET, or set %s=ID.",
		gh.Base, gh.Base, want, EnvGitHubClientID)
}

// gitHubSubject asks GitHub's REST API who the token belongs to (GET
// /user); empty when it cannot tell.
func (cl *Client) gitHubSubject(ctx context.Context, gh *flows.GitHubHost, token string) string {
	login, err := flows.GitHubUser(ctx, cl.HTTPClient, gh, token)
	if err != nil {
		cl.logger().Debug("cannot ask GitHub for the login", "api", gh.API, "err", err)
		return ""
	}
	return login
}

// gitHubStatus replaces the stored login of a GitHub credential with the
// one GitHub's /user gives, when reachable within gitHubUserTimeout.
func (cl *Client) gitHubStatus(ctx context.Context, c *store.Credential, cs *CredentialStatus) {
	cs.Provider = c.Provider
	if c.Provider != ProviderGitHub || c.AccessToken == "" {
		return
	}
	gh, err := flows.NewGitHubHost(wire.Origin(c.Issuer))
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, gitHubUserTimeout)
	defer cancel()
	if login := cl.gitHubSubject(ctx, gh, c.AccessToken); login != "" {
		cs.Subject, cs.SubjectChecked = login, true
	}
}
