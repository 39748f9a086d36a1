package agentauthtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/wire"
)

// TokenRequest is what a helper grant asks for. Zero fields take the
// server's defaults.
type TokenRequest struct {
	// Subject is the user who signs in (default Server.Subject).
	Subject string
	// Scopes are the scopes asked for (default Server.Scopes). The
	// server grants any well-formed scope asked for.
	Scopes []string
	// Resource is the RFC 8707 resource indicator, the token's audience
	// (default Server.URL).
	Resource string
}

// Token is what a grant yielded. It holds secrets: do not log it.
type Token struct {
	AccessToken  string
	RefreshToken string
	// TokenType is "Bearer", or "DPoP" for a token bound to a DPoP key
	// (WithDPoP).
	TokenType string
	Scopes    []string
	Expiry    time.Time
	// Resource is the token's audience; Subject whom it names.
	Resource string
	Subject  string
	// ClientID is the OAuth client the grant ran as.
	ClientID string

	client flows.Client // its id, and its DPoP key when bound
}

// String describes the token without its secrets.
func (tok *Token) String() string {
	return fmt.Sprintf("%s token for %s as %s (%s, client %s)", tok.TokenType, tok.Resource, tok.Subject, strings.Join(tok.Scopes, " "), tok.ClientID)
}

// Token runs the authorization code grant (AuthorizationCode) and fails
// the test if it does not yield a token.
func (s *Server) Token(t testing.TB, req TokenRequest) *Token {
	t.Helper()
	tok, err := s.AuthorizationCode(context.Background(), req)
	if err != nil {
		t.Fatalf("agentauthtest: cannot get a token: %v", err)
	}
	return tok
}

// AuthorizationCode runs a whole authorization code grant with PKCE S256
// (RFC 6749 §4.1, RFC 7636) as a native client would: a loopback redirect
// listener (RFC 8252 §7.3), the authorization request opened by
// Server.Browser as req.Subject, the code exchanged at the token
// endpoint. No browser is involved.
func (s *Server) AuthorizationCode(ctx context.Context, req TokenRequest) (*Token, error) {
	md, c, req, err := s.prepare(ctx, req, false)
	if err != nil {
		return nil, err
	}
	ft, err := flows.AuthorizationCode(ctx, s.hc, flows.AuthCodeRequest{
		Metadata: md, Client: c, Scopes: req.Scopes, Resource: req.Resource,
		OpenURL: s.Browser(req.Subject), Timeout: 30 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return newToken(ft, req, c), nil
}

// DeviceCode runs a whole device authorization grant (RFC 8628): the
// device authorization request, the verification_uri_complete opened by
// Server.Browser as req.Subject (which approves it), then the token
// polls, one a second.
func (s *Server) DeviceCode(ctx context.Context, req TokenRequest) (*Token, error) {
	md, c, req, err := s.prepare(ctx, req, true)
	if err != nil {
		return nil, err
	}
	browser := s.Browser(req.Subject)
	opened := make(chan error, 1)
	ft, err := flows.DeviceCode(ctx, s.hc, flows.DeviceRequest{
		Metadata: md, Client: c, Scopes: req.Scopes, Resource: req.Resource,
		ShowCode: func(p flows.DeviceCodePrompt) { go func() { opened <- browser(p.VerificationURIComplete) }() },
	})
	if err != nil {
		select {
		case oerr := <-opened:
			if oerr != nil {
				return nil, fmt.Errorf("%w (approving: %v)", err, oerr)
			}
		default:
		}
		return nil, err
	}
	return newToken(ft, req, c), nil
}

// Refresh runs the refresh token grant (RFC 6749 §6) for tok's grant:
// the server rotates the refresh token, so tok's is spent and the
// returned Token holds the next.
func (s *Server) Refresh(ctx context.Context, tok *Token) (*Token, error) {
	md, err := s.metadata(ctx)
	if err != nil {
		return nil, err
	}
	ft, err := flows.Refresh(ctx, s.hc, flows.RefreshRequest{TokenEndpoint: md.TokenEndpoint, Client: tok.client,
		RefreshToken: tok.RefreshToken, Resource: tok.Resource, Scopes: tok.Scopes})
	if err != nil {
		return nil, err
	}
	return newToken(ft, TokenRequest{Subject: tok.Subject, Resource: tok.Resource, Scopes: tok.Scopes}, tok.client), nil
}

// Revoke revokes tok's grant at the revocation endpoint (RFC 7009): its
// refresh token, and with it every access token the grant issued, which
// the protected endpoint refuses from then on (401 invalid_token).
func (s *Server) Revoke(ctx context.Context, tok *Token) error {
	md, err := s.metadata(ctx)
	if err != nil {
		return err
	}
	t, hint := tok.RefreshToken, flows.HintRefreshToken
	if t == "" {
		t, hint = tok.AccessToken, flows.HintAccessToken
	}
	return flows.Revoke(ctx, s.hc, flows.RevokeRequest{Endpoint: md.RevocationEndpoint, Client: tok.client, Token: t, TokenTypeHint: hint})
}

// prepare fills req's defaults and chooses the client: agentauth-cli, a
// registration (WithDCR) or the metadata document's URL (WithCIMD), with
// a fresh DPoP key (WithDPoP).
func (s *Server) prepare(ctx context.Context, req TokenRequest, device bool) (*wire.AuthServerMetadata, flows.Client, TokenRequest, error) {
	if s.hc == nil {
		return nil, flows.Client{}, req, errNoServer
	}
	if req.Subject == "" {
		req.Subject = s.Subject
	}
	if req.Scopes == nil {
		req.Scopes = s.Scopes
	}
	if req.Resource == "" {
		req.Resource = s.URL
	}
	md, err := s.metadata(ctx)
	if err != nil {
		return nil, flows.Client{}, req, err
	}
	c := flows.Client{ID: "agentauth-cli", AuthMethod: flows.AuthMethodNone}
	switch {
	case s.opts.dcr:
		reg, err := flows.Register(ctx, s.hc, md.RegistrationEndpoint, flows.RegistrationRequest{ClientName: "agentauthtest client", Device: device})
		if err != nil {
			return nil, c, req, err
		}
		c = reg.Client()
	case s.opts.cimd:
		c.ID = s.cimd
	}
	if s.opts.dpop {
		if c.DPoP, _, err = wire.NewDPoPKey(); err != nil {
			return nil, c, req, err
		}
	}
	return md, c, req, nil
}

func newToken(ft *flows.Token, req TokenRequest, c flows.Client) *Token {
	return &Token{AccessToken: ft.AccessToken, RefreshToken: ft.RefreshToken, TokenType: ft.TokenType,
		Scopes: slices.Clone(ft.Scopes), Expiry: ft.Expiry, Resource: req.Resource, Subject: req.Subject,
		ClientID: c.ID, client: c}
}

// Browser returns a stand-in for a person at a browser, for a client
// under test to open authorization URLs with (for example as
// mcptransport.Options.Browser): it signs in to the authorization server as
// subject (default Server.Subject), then GETs the URL and follows the
// redirects; the server approves at once, so an authorization request
// ends at the client's loopback redirect URI and a device verification
// URI approves the code. It fails unless the last answer is a 2xx.
func (s *Server) Browser(subject string) func(url string) error {
	if subject == "" {
		subject = s.Subject
	}
	return func(u string) error {
		jar, err := cookiejar.New(nil)
		if err != nil {
			return err
		}
		b := &http.Client{Jar: jar, Timeout: 30 * time.Second}
		resp, err := b.PostForm(s.Issuer+"/login", url.Values{"subject": {subject}})
		if err != nil {
			return fmt.Errorf("cannot sign in as %s: %w", subject, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("cannot sign in as %s: %s", subject, resp.Status)
		}
		resp, err = b.Get(u)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("the browser ended at %s: %s", resp.Request.URL.Redacted(), resp.Status)
		}
		return nil
	}
}

// SetAuth puts tok on r: Authorization: Bearer TOKEN (RFC 6750 §2.1), or
// for a DPoP-bound token Authorization: DPoP TOKEN with a DPoP proof for
// r's method and URL (RFC 9449 §7.1).
func (tok *Token) SetAuth(r *http.Request) error {
	if tok.client.DPoP == nil {
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return nil
	}
	htu, err := wire.DPoPTargetURI(r.URL.String())
	if err != nil {
		return err
	}
	proof, err := tok.client.DPoP.Proof(r.Method, htu, tok.AccessToken, "", time.Now())
	if err != nil {
		return err
	}
	r.Header.Set("Authorization", wire.TokenTypeDPoP+" "+tok.AccessToken)
	r.Header.Set(wire.HeaderDPoP, proof)
	return nil
}

// HTTPClient is an HTTP client that puts tok on every request to its
// resource's origin (SetAuth), and on none to another origin: for an MCP
// client under test, e.g. the Go SDK's
// mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: tok.HTTPClient()}.
func (tok *Token) HTTPClient() *http.Client {
	return &http.Client{Transport: &tokenTransport{tok: tok, origin: wire.Origin(tok.Resource)}}
}

type tokenTransport struct {
	tok    *Token
	origin string
}

func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if wire.Origin(r.URL.String()) != t.origin {
		return http.DefaultTransport.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	if err := t.tok.SetAuth(r); err != nil {
		return nil, err
	}
	return http.DefaultTransport.RoundTrip(r)
}
