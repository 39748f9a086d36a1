package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// LoginOptions are login's inputs.
type LoginOptions struct {
	IO *IOStreams
	// Factory gives the store, the HTTP client, the browser and the clock.
	Factory *Factory

	Target   string
	SchemeID string
	LoginChoices
	// AllowResources are resources on another origin than Target that the
	// user allows Target to receive tokens for (--allow-resource).
	AllowResources []string
	NoResource     bool
	Timeout        time.Duration
	JSON           bool
	// Web, GitHubHost and GitHubClientID ($AGENTAUTH_GITHUB_CLIENT_ID)
	// choose GitHub's flow; Endpoints stand in for missing metadata.
	Web            bool
	GitHubHost     string
	GitHubClientID string
	Endpoints      client.Endpoints
	// Force logs in again without asking when already logged in.
	Force bool
	// ClientCredentials runs the client credentials grant with --client-id
	// and --client-secret-stdin or PrivateKeyFile (--private-key).
	ClientCredentials bool
	PrivateKeyFile    string
	// AssertionFile and AssertionEnv run the JWT bearer grant.
	AssertionFile, AssertionEnv string
	// Enterprise-managed authorization: the ID token (IDTokenFile, or
	// stdin with SubjectTokenStdin) is exchanged at the IdP's token
	// endpoint as IdPClientID.
	IDTokenFile       string
	SubjectTokenStdin bool
	IdPTokenEndpoint  string
	IdPClientID       string
	// WithToken stores an access token read from stdin instead of logging
	// in (like gh auth login --with-token).
	WithToken bool
}

// LoginChoices are how the user wants to log in: the flags that login and
// call --login share.
type LoginChoices struct {
	Scopes            []string
	ClientID          string
	ClientSecretStdin bool
	ClientMetadataURL string
	Device            bool
	NoBrowser         bool
	CallbackHost      string
	CallbackPort      int
	DPoP              bool

	scopes    cli.StringSlice // --scope; check copies it into Scopes
	withToken string          // login --with-token's token, read from stdin
}

// loginChoiceFlags declares the shared login flags, writing into ch; prefix
// starts each usage text ("" for login, "with --login, " for call).
func loginChoiceFlags(ch *LoginChoices, prefix string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "scope", Usage: prefix + "also request `SCOPE` (repeatable)", Destination: &ch.scopes},
		&cli.StringFlag{Name: "client-id", Usage: prefix + "use the pre-registered client `ID`", Destination: &ch.ClientID},
		&cli.BoolFlag{Name: "client-secret-stdin", Usage: prefix + "read the pre-registered client's secret from stdin", Destination: &ch.ClientSecretStdin},
		&cli.StringFlag{Name: "client-metadata-url", Usage: prefix + "https `URL` of agentauth's client ID metadata document, used as client_id where the server supports it", Destination: &ch.ClientMetadataURL},
		&cli.BoolFlag{Name: "device", Usage: prefix + "use the device authorization grant (RFC 8628): approve on any device", Destination: &ch.Device},
		&cli.BoolFlag{Name: "no-browser", Usage: prefix + "print the URL instead of opening a browser", Destination: &ch.NoBrowser},
		&cli.StringFlag{Name: "callback-host", Value: "127.0.0.1", Usage: prefix + "redirect URI host: `127.0.0.1` or localhost", Destination: &ch.CallbackHost},
		&cli.IntFlag{Name: "callback-port", Usage: prefix + "listen for the redirect on `PORT`", DefaultText: "a free one", Destination: &ch.CallbackPort},
		&cli.BoolFlag{Name: "dpop", Usage: prefix + "get a token bound to a key of the credential (DPoP, RFC 9449), useless to whoever copies it", Destination: &ch.DPoP},
	}
}

func newLoginCommand(f *Factory) *cli.Command { return loginCommandWith(f, runLogin) }

// loginCommandWith builds the command; run is runLogin except in the flag tests.
func loginCommandWith(f *Factory, run func(context.Context, *LoginOptions) error) *cli.Command {
	opts := &LoginOptions{}
	return &cli.Command{
		Name:      "login",
		Usage:     "log in to a target's authorization server and store the token",
		ArgsUsage: "TARGET",
		Description: `Discovers what TARGET needs (see discover), then runs the authorization code
grant with PKCE over a loopback redirect (http://127.0.0.1:PORT/callback), or
with --device the device authorization grant (RFC 8628), for each required
scheme (or --scheme), and stores the credential keyed by (resource, issuer,
scheme).

Scopes: the challenge's scope, else the resource's scopes_supported, else none;
--scope adds to them. No openid/profile default.

GitHub: when the authorization server is https://github.com/login/oauth, a
*.ghe.com tenant, a GitHub Enterprise Server (an origin's /login/oauth that
publishes no metadata) or the host named by --github-host, login runs
GitHub's device flow (github.com/cli/oauth; no client secret is sent), or
with --web its web flow over the loopback redirect with PKCE S256 (which
needs --client-secret-stdin). The client is your GitHub OAuth app:
--client-id, else $AGENTAUTH_GITHUB_CLIENT_ID.

No metadata: --authorization-endpoint, --token-endpoint (and
--device-authorization-endpoint, --revocation-endpoint) are used only when
discovery finds no RFC 8414 or OpenID Connect metadata, with a warning that
nothing could be verified; PKCE S256 is still sent.

Client: --client-id (a pre-registered client; --client-secret-stdin for a
confidential one), else a registration stored for this issuer, else a
client ID metadata document (--client-metadata-url, when the server
supports it), else dynamic registration (RFC 7591). A stored registration
the server rejects with invalid_client is dropped and registration is done
again, once.

Machines: --client-credentials runs the client credentials grant (RFC 6749
§4.4) as the pre-registered confidential client --client-id, authenticated
with a secret on stdin (--client-secret-stdin) or a signed JWT
(private_key_jwt, RFC 7523 §2.2) made with the PEM key --private-key FILE
(P-256: ES256; RSA: RS256). No browser opens; the key or secret is stored
with the credential and the grant is run again when the token expires.

DPoP: with --dpop, login generates a P-256 key for the credential and
gets a token bound to it (RFC 9449); the key is stored with the
credential, never printed, and every token, refresh and resource request
carries a fresh ES256 proof (with the server's DPoP-Nonce when it asks
for one, retried once). Such a token is useless without the key, so it
cannot be used outside agentauth (agentauth token | curl): without
--dpop the token is a bearer token.

Workload identity: --assertion-file FILE or --assertion-env NAME runs the
JWT bearer grant (RFC 7523 §2.1) as --client-id (public, or with
--client-secret-stdin or --private-key) with a JWT the platform issued (a
CI job's OIDC token). The file or variable, not the token, is stored, and
read again when the access token expires. A refused assertion is not
retried.

Enterprise-managed authorization: --idp-token-endpoint URL with
--idp-client-id ID and the user's ID token from the enterprise IdP
(--id-token-file FILE, or --subject-token-stdin) exchanges the ID token at
the IdP (RFC 8693) for an identity assertion grant (ID-JAG) for the MCP
authorization server and resource, then that at the authorization server
with the JWT bearer grant as --client-id. Renewal exchanges the ID token
file again; a token from stdin is not stored.

Browser: $BROWSER is run with the URL when set, even without a terminal;
otherwise the platform opener is used only when stdout or stderr is a
terminal; otherwise, or with --no-browser, the URL is printed on stderr. The
browser is tried before the URL is shown: "Opening URL in your browser."
once the opener succeeded; if it failed, a warning saying why, then the URL
to open by hand. The device flow opens its verification URL the same way and
always prints the code on stderr.

The keyring (the default store) is checked before anything starts; if it does
not work, login stops and says to use --store file. If the final write fails
anyway, the credential goes to the file store with a warning.

Already logged in to TARGET (a valid or refreshable credential): on a
terminal login asks before replacing it (no keeps it, exit 0); without one
it says so and logs in again; --force skips both.

On success one line goes to stderr; --json prints on stdout:
{"target", "kept" (true when you chose to keep the current login), "logins": [{"resource", "issuer", "schemeId", "subject", "provider", "scopes",
 "tokenType", "expiresAt", "refreshable", "client": {"clientId", "authMethod",
 "source"}, "store", "storeLocation"}]} (never a token or secret).`,
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "scheme", Usage: "log in to the scheme `ID` only (default: every required scheme)", Destination: &opts.SchemeID},
		}, loginChoiceFlags(&opts.LoginChoices, "")...),
			&cli.StringSliceFlag{Name: "allow-resource", Usage: "let TARGET receive tokens for `URL`, a resource it declares on another origin (repeatable)"},
			&cli.BoolFlag{Name: "no-resource", Usage: "do not send the RFC 8707 resource parameter", Destination: &opts.NoResource},
			&cli.DurationFlag{Name: "timeout", Value: flows.DefaultLoginTimeout, Usage: "give up after `DURATION` without an approval", Destination: &opts.Timeout},
			&cli.BoolFlag{Name: "json", Usage: "print the login details as JSON on stdout", Destination: &opts.JSON},
			&cli.BoolFlag{Name: "web", Usage: "GitHub hosts: use the web flow (loopback redirect) instead of the device flow", Destination: &opts.Web},
			&cli.StringFlag{Name: "github-host", Usage: "treat `HOST` as a GitHub Enterprise Server (a host name, or an http://127.0.0.1:PORT URL for a test's fake GitHub)", Destination: &opts.GitHubHost},
			&cli.StringFlag{Name: "authorization-endpoint", Usage: "without metadata: the authorization endpoint `URL`", Destination: &opts.Endpoints.Authorization},
			&cli.StringFlag{Name: "token-endpoint", Usage: "without metadata: the token endpoint `URL`", Destination: &opts.Endpoints.Token},
			&cli.StringFlag{Name: "device-authorization-endpoint", Usage: "without metadata: the device authorization endpoint `URL`", Destination: &opts.Endpoints.DeviceAuthorization},
			&cli.StringFlag{Name: "revocation-endpoint", Usage: "without metadata: the revocation endpoint `URL`", Destination: &opts.Endpoints.Revocation},
			&cli.BoolFlag{Name: "force", Usage: "log in again without asking when TARGET already has a valid login", Destination: &opts.Force},
			&cli.BoolFlag{Name: "with-token", Usage: "store an access token read from stdin for TARGET instead of logging in (one scheme: --scheme when TARGET declares several); not refreshable", Destination: &opts.WithToken},
			&cli.BoolFlag{Name: "client-credentials", Usage: "run the client credentials grant (RFC 6749 §4.4) as the client --client-id, with --client-secret-stdin or --private-key: no user, no browser", Destination: &opts.ClientCredentials},
			&cli.StringFlag{Name: "assertion-file", Usage: "run the JWT bearer grant (RFC 7523) as --client-id with the JWT in `FILE` (a CI platform's workload identity token), read again at each renewal", Destination: &opts.AssertionFile},
			&cli.StringFlag{Name: "assertion-env", Usage: "run the JWT bearer grant (RFC 7523) as --client-id with the JWT in the environment variable `NAME`, read again at each renewal", Destination: &opts.AssertionEnv},
			&cli.StringFlag{Name: "idp-token-endpoint", Usage: "enterprise-managed authorization: exchange the ID token at the enterprise IdP's token endpoint `URL` (RFC 8693) for an ID-JAG", Destination: &opts.IdPTokenEndpoint},
			&cli.StringFlag{Name: "idp-client-id", Usage: "enterprise-managed authorization: agentauth's client `ID` at the IdP", Destination: &opts.IdPClientID},
			&cli.StringFlag{Name: "id-token-file", Usage: "enterprise-managed authorization: the user's ID token from the IdP, in `FILE` (read again at each renewal)", Destination: &opts.IDTokenFile},
			&cli.BoolFlag{Name: "subject-token-stdin", Usage: "enterprise-managed authorization: read the user's ID token from stdin (not stored: log in again when the token expires)", Destination: &opts.SubjectTokenStdin},
			&cli.StringFlag{Name: "private-key", Usage: "with --client-credentials: authenticate with private_key_jwt (RFC 7523), signing with the PEM key in `FILE` (P-256 for ES256, RSA for RS256)", Destination: &opts.PrivateKeyFile},
		),
		Action: func(c *cli.Context) error {
			var err error
			if opts.Target, err = targetArg(c); err != nil {
				return err
			}
			if err := opts.check(c.IsSet("client-id")); err != nil {
				return err
			}
			opts.AllowResources = c.StringSlice("allow-resource")
			for _, r := range opts.AllowResources {
				if wire.Origin(r) == "" {
					return usageErrorf("--allow-resource must be an http(s) URL, not %q", r)
				}
			}
			opts.GitHubClientID = os.Getenv(client.EnvGitHubClientID)
			opts.IO, opts.Factory = f.IO, f
			f.RememberStore = true
			return withTarget(opts.Target, run(c.Context, opts))
		},
	}
}

// check rejects flag combinations that cannot work.
func (opts *LoginOptions) check(clientIDSet bool) error {
	if opts.Timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	e := opts.Endpoints
	for _, f := range []struct{ name, url string }{{"authorization-endpoint", e.Authorization}, {"token-endpoint", e.Token},
		{"device-authorization-endpoint", e.DeviceAuthorization}, {"revocation-endpoint", e.Revocation}} {
		if f.url != "" && flows.CheckURL(f.url) != nil {
			return usageErrorf("--%s must be an https URL (http only to a loopback address), not %q", f.name, f.url)
		}
	}
	switch {
	case opts.WithToken && (opts.ClientSecretStdin || opts.SubjectTokenStdin || opts.ClientCredentials || opts.Device || opts.Web ||
		opts.AssertionFile != "" || opts.AssertionEnv != "" || opts.IDTokenFile != "" || opts.DPoP || e.Set()):
		return usageErrorf("--with-token stores the token read from stdin: it excludes the flags of a login (--device, --web, --dpop, --client-credentials, the assertions, the endpoints, the other stdin flags)")
	case e.Set() && e.Token == "":
		return usageErrorf("--%s needs --token-endpoint", firstEndpointFlag(e))
	case opts.Web && opts.Device:
		return usageErrorf("--web and --device exclude each other")
	case opts.GitHubHost != "" && e.Set():
		return usageErrorf("--github-host and --%s exclude each other: a GitHub host's endpoints are GitHub's", firstEndpointFlag(e))
	case (opts.IDTokenFile != "" || opts.SubjectTokenStdin) != (opts.IdPTokenEndpoint != ""):
		return usageErrorf("--idp-token-endpoint goes with one of --id-token-file and --subject-token-stdin")
	case opts.IdPTokenEndpoint != "" && (opts.IdPClientID == "" || opts.ClientID == "" || flows.CheckURL(opts.IdPTokenEndpoint) != nil):
		return usageErrorf("--idp-token-endpoint needs --idp-client-id and --client-id, and must be an https URL (http only to a loopback address)")
	case opts.IDTokenFile != "" && (opts.SubjectTokenStdin || opts.AssertionFile != "" || opts.AssertionEnv != ""):
		return usageErrorf("--id-token-file excludes --subject-token-stdin, --assertion-file and --assertion-env")
	case opts.SubjectTokenStdin && opts.ClientSecretStdin:
		return usageErrorf("--subject-token-stdin and --client-secret-stdin both read stdin: give the client a --private-key, or the ID token with --id-token-file")
	case opts.AssertionFile != "" && opts.AssertionEnv != "":
		return usageErrorf("--assertion-file and --assertion-env exclude each other")
	case (opts.AssertionFile != "" || opts.AssertionEnv != "") && (opts.ClientCredentials || opts.ClientID == ""):
		return usageErrorf("--assertion-file and --assertion-env need --client-id and exclude --client-credentials")
	case (opts.AssertionFile != "" || opts.AssertionEnv != "") && (opts.Device || opts.Web || opts.GitHubHost != "" || opts.ClientMetadataURL != ""):
		return usageErrorf("--assertion-file and --assertion-env exclude --device, --web, --github-host and --client-metadata-url: no user takes part")
	case opts.PrivateKeyFile != "" && !opts.ClientCredentials && opts.AssertionFile == "" && opts.AssertionEnv == "" && opts.IdPTokenEndpoint == "":
		return usageErrorf("--private-key needs --client-credentials, --assertion-file, --assertion-env or --idp-token-endpoint")
	case opts.ClientCredentials && opts.ClientID == "":
		return usageErrorf("--client-credentials needs --client-id")
	case opts.ClientCredentials && opts.ClientSecretStdin == (opts.PrivateKeyFile != ""):
		return usageErrorf("--client-credentials needs one of --client-secret-stdin and --private-key")
	case opts.ClientCredentials && (opts.Device || opts.Web || opts.GitHubHost != "" || opts.ClientMetadataURL != ""):
		return usageErrorf("--client-credentials excludes --device, --web, --github-host and --client-metadata-url: no user takes part")
	case opts.GitHubHost != "" && strings.Contains(opts.GitHubHost, "://") && (flows.CheckURL(opts.GitHubHost) != nil || client.GitHubBase(opts.GitHubHost) == ""):
		return usageErrorf("--github-host must be a host name, or an https URL (http only to a loopback address), not %q", opts.GitHubHost)
	}
	return opts.LoginChoices.check(clientIDSet)
}

// firstEndpointFlag names the first endpoint flag given, for messages.
func firstEndpointFlag(e client.Endpoints) string {
	switch {
	case e.Authorization != "":
		return "authorization-endpoint"
	case e.Token != "":
		return "token-endpoint"
	case e.DeviceAuthorization != "":
		return "device-authorization-endpoint"
	}
	return "revocation-endpoint"
}

// check rejects login choices that cannot work; clientIDSet says whether
// --client-id was given. It also reads --scope into Scopes.
func (ch *LoginChoices) check(clientIDSet bool) error {
	ch.Scopes = ch.scopes.Value()
	switch {
	case clientIDSet && ch.ClientID == "":
		return usageErrorf("--client-id must not be empty")
	case ch.ClientSecretStdin && ch.ClientID == "":
		return usageErrorf("--client-secret-stdin needs --client-id")
	case ch.CallbackHost != "127.0.0.1" && ch.CallbackHost != "localhost":
		return usageErrorf("--callback-host must be 127.0.0.1 or localhost, not %q", ch.CallbackHost)
	case ch.CallbackPort < 0 || ch.CallbackPort > 65535:
		return usageErrorf("--callback-port must be between 1 and 65535")
	case ch.Device && ch.CallbackPort != 0:
		return usageErrorf("--callback-port does not apply to --device")
	}
	for _, s := range ch.Scopes {
		if strings.TrimSpace(s) == "" {
			return usageErrorf("--scope must not be empty")
		}
	}
	if ch.ClientMetadataURL != "" {
		u, err := url.Parse(ch.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.Fragment != "" {
			return usageErrorf("--client-metadata-url must be an https URL with a path (a client ID metadata document), not %q", ch.ClientMetadataURL)
		}
	}
	return nil
}

// choices are the client core's view of the flags, with the
// pre-registered client's secret (read from stdin once per command).
func (ch *LoginChoices) choices(secret string) client.Choices {
	return client.Choices{
		Scopes:            ch.Scopes,
		ClientID:          ch.ClientID,
		ClientSecret:      secret,
		ClientMetadataURL: ch.ClientMetadataURL,
		Device:            ch.Device,
		CallbackHost:      ch.CallbackHost,
		CallbackPort:      ch.CallbackPort,
		NoBrowser:         ch.NoBrowser,
		DPoP:              ch.DPoP,
	}
}

func runLogin(ctx context.Context, opts *LoginOptions) error {
	// A token given replaces the stored one, as gh auth login --with-token.
	opts.Force = opts.Force || opts.WithToken
	goOn, kept, err := checkRelogin(ctx, opts)
	if err != nil {
		return err
	}
	if !goOn {
		if !opts.JSON {
			return nil
		}
		st, err := opts.Factory.Store()
		if err != nil {
			return err
		}
		return opts.printDoc(kept, st, true)
	}
	var secret string
	if opts.WithToken {
		// No grant: the token goes to the store as given, bound to TARGET's
		// requirement like a login (origin rule, --allow-resource).
		var err error
		if opts.LoginChoices.withToken, err = readStdinSecret(opts.IO.In, "--with-token", "token"); err != nil {
			return err
		}
	}
	if opts.ClientSecretStdin {
		var err error
		if secret, err = readStdinSecret(opts.IO.In, "--client-secret-stdin", "client secret"); err != nil {
			return err
		}
	}
	ch := opts.choices(secret)
	ch.Token = opts.LoginChoices.withToken
	if opts.PrivateKeyFile != "" {
		pemBytes, err := os.ReadFile(opts.PrivateKeyFile)
		if err != nil {
			return fmt.Errorf("cannot read the private key: %w", err)
		}
		ch.PrivateKey = string(pemBytes)
	}
	ch.ClientCredentials = opts.ClientCredentials
	ch.IdP = client.IdP{TokenEndpoint: opts.IdPTokenEndpoint, ClientID: opts.IdPClientID}
	if opts.SubjectTokenStdin {
		var err error
		if ch.Assertion, err = readStdinSecret(opts.IO.In, "--subject-token-stdin", "ID token"); err != nil {
			return err
		}
	}
	switch {
	case opts.IDTokenFile != "":
		path, err := filepath.Abs(opts.IDTokenFile)
		if err != nil {
			return fmt.Errorf("cannot use the ID token file: %w", err)
		}
		ch.AssertionSource = client.AssertionFromFile(path)
	case opts.AssertionFile != "":
		path, err := filepath.Abs(opts.AssertionFile)
		if err != nil {
			return fmt.Errorf("cannot use the assertion file: %w", err)
		}
		ch.AssertionSource = client.AssertionFromFile(path)
	case opts.AssertionEnv != "":
		ch.AssertionSource = client.AssertionFromEnv(opts.AssertionEnv)
	}
	ch.NoResource, ch.Timeout, ch.AllowResources = opts.NoResource, opts.Timeout, opts.AllowResources
	ch.Web, ch.GitHubHost, ch.GitHubClientID, ch.Endpoints = opts.Web, opts.GitHubHost, opts.GitHubClientID, opts.Endpoints
	creds, st, err := opts.Factory.Client().LoginTarget(ctx, client.TargetLogin{Target: opts.Target, SchemeID: opts.SchemeID, Choices: ch})
	if err != nil {
		return err
	}
	if !opts.JSON {
		return nil
	}
	return opts.printDoc(creds, st, false)
}

// printDoc prints login --json's document for creds, stored in st; kept
// says the user chose to keep the current login instead.
func (opts *LoginOptions) printDoc(creds []*store.Credential, st store.Store, kept bool) error {
	doc := loginDoc{Target: wire.RedactTarget(opts.Target), Kept: kept, Logins: []loginDetails{}}
	for _, c := range creds {
		doc.Logins = append(doc.Logins, detailsOf(c, st))
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot print the login: %w", err)
	}
	fmt.Fprintln(opts.IO.Out, string(b))
	return nil
}

// loginDoc is login --json's document (documented in its help).
type loginDoc struct {
	Target string `json:"target"`
	// Kept: the user declined to log in again; Logins are the current ones.
	Kept   bool           `json:"kept,omitempty"`
	Logins []loginDetails `json:"logins"`
}

// loginDetails are a credential's non-secret details.
type loginDetails struct {
	Resource      string    `json:"resource"`
	Issuer        string    `json:"issuer"`
	SchemeID      string    `json:"schemeId,omitempty"`
	Subject       string    `json:"subject,omitempty"`
	Provider      string    `json:"provider,omitempty"`
	Scopes        []string  `json:"scopes"`
	TokenType     string    `json:"tokenType"`
	ExpiresAt     time.Time `json:"expiresAt,omitzero"`
	Refreshable   bool      `json:"refreshable"`
	Client        clientDoc `json:"client"`
	Store         string    `json:"store"`
	StoreLocation string    `json:"storeLocation"`
}

type clientDoc struct {
	ClientID   string `json:"clientId"`
	AuthMethod string `json:"authMethod"`
	Source     string `json:"source"`
}

// detailsOf are c's non-secret details, stored in st.
func detailsOf(c *store.Credential, st store.Store) loginDetails {
	return loginDetails{Resource: c.Resource, Issuer: c.Issuer, SchemeID: c.SchemeID, Subject: c.Subject, Provider: c.Provider,
		Scopes: nonNil(c.Scopes), TokenType: c.TokenType, ExpiresAt: c.Expiry.UTC().Truncate(time.Second), Refreshable: c.RefreshToken != "",
		Client: clientDoc{ClientID: c.Client.ClientID, AuthMethod: c.Client.AuthMethod, Source: c.Client.Source},
		Store:  st.Kind(), StoreLocation: st.Location()}
}
