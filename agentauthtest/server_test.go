package agentauthtest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/agentauthtest"
)

// connect opens a Go SDK client session to url through hc.
func connect(t *testing.T, url string, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "agentauthtest-test", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
}

// callText calls tool and returns its text, or the error.
func callText(t *testing.T, cs *mcp.ClientSession, tool string, args any) (string, error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", errors.New(b.String())
	}
	return b.String(), nil
}

// Serve's own endpoint refuses a request without a token with the RFC
// 9728 challenge, and serves whoami to a token of each grant and each
// kind of client, naming the subject asked for.
func TestOwnEndpoint(t *testing.T) {
	resp, err := http.Post(agentauthtest.NewServer(t).URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("no token: %s, WWW-Authenticate %q; want 401 with resource_metadata", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	for _, tc := range []struct {
		name   string
		opts   []agentauthtest.Option
		device bool
		typ    string
	}{
		{"code", nil, false, "Bearer"},
		{"device", nil, true, "Bearer"},
		{"dpop", []agentauthtest.Option{agentauthtest.WithDPoP()}, false, "DPoP"},
		{"dcr", []agentauthtest.Option{agentauthtest.WithDCR()}, false, "Bearer"},
		{"dcr device", []agentauthtest.Option{agentauthtest.WithDCR()}, true, "Bearer"},
		{"cimd", []agentauthtest.Option{agentauthtest.WithCIMD()}, false, "Bearer"},
		{"cimd dpop device", []agentauthtest.Option{agentauthtest.WithCIMD(), agentauthtest.WithDPoP()}, true, "DPoP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := agentauthtest.NewServer(t, tc.opts...)
			grant := srv.AuthorizationCode
			if tc.device {
				grant = srv.DeviceCode
			}
			tok, err := grant(context.Background(), agentauthtest.TokenRequest{Subject: "bob"})
			if err != nil {
				t.Fatal(err)
			}
			if tok.TokenType != tc.typ || tok.Subject != "bob" || tok.Resource != srv.URL {
				t.Fatalf("token %v; want a %s token for %s as bob", tok, tc.typ, srv.URL)
			}
			cs, err := connect(t, srv.URL, tok.HTTPClient())
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			text, err := callText(t, cs, "whoami", map[string]any{})
			if err != nil || !strings.Contains(text, `"bob"`) || !strings.Contains(text, tok.ClientID) {
				t.Fatalf("whoami: %q, %v; want bob and client %s", text, err, tok.ClientID)
			}
			if strings.Contains(text, tok.AccessToken) {
				t.Fatal("whoami shows the token")
			}
		})
	}
}

// A refreshed token works and the spent refresh token does not; a
// revoked grant's access token is refused at once.
func TestRefreshAndRevoke(t *testing.T) {
	srv := agentauthtest.NewServer(t)
	ctx := context.Background()
	tok := srv.Token(t, agentauthtest.TokenRequest{})
	next, err := srv.Refresh(ctx, tok)
	if err != nil || next.AccessToken == tok.AccessToken || next.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh: %v, %v; want new tokens", next, err)
	}
	if err := srv.Revoke(ctx, next); err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, srv.URL, next.HTTPClient()); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("a revoked token connected: %v", err)
	}
}

// mcpServer is an MCP server made with the Go SDK, as a project under
// test has: tool hello greets the caller the gateway vouches for
// (srv.Caller), tool admin needs scope "admin" at the gateway.
func mcpServer(srv **agentauthtest.Server) http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "app", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "hello"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		c, err := (*srv).Caller(ctx, req.Extra.Header)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("hello %s (client %s, %v)", c.Subject, c.ClientID, c.Scopes)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "admin"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "admin done"}}}, nil, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// The gateway in front of a Go SDK server: no token, no session; a token
// reaches the tools, except the one that needs a scope the token lacks
// (403 insufficient_scope), which a token with it reaches.
func TestGateway(t *testing.T) {
	var srv *agentauthtest.Server
	srv = agentauthtest.NewServer(t, agentauthtest.WithHandler(mcpServer(&srv)), agentauthtest.WithToolScope("admin", "admin"))
	if _, err := connect(t, srv.URL, http.DefaultClient); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("connected without a token: %v", err)
	}
	cs, err := connect(t, srv.URL, srv.Token(t, agentauthtest.TokenRequest{}).HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if text, err := callText(t, cs, "hello", map[string]any{}); err != nil || text != "hello alice (client agentauth-cli, [agent:use])" {
		t.Fatalf("hello: %q, %v", text, err)
	}
	// A request that did not come through the gateway names nobody.
	if _, err := srv.Caller(context.Background(), http.Header{"Authorization": {"Bearer " + srv.Token(t, agentauthtest.TokenRequest{}).AccessToken}}); err == nil {
		t.Fatal("Caller accepted the client's own token, whose audience is the gateway")
	}
	if text, err := callText(t, cs, "admin", map[string]any{}); err == nil || !strings.Contains(err.Error(), "insufficient") {
		t.Fatalf("admin without its scope: %q, %v; want insufficient scope", text, err)
	}
	admin := srv.Token(t, agentauthtest.TokenRequest{Scopes: []string{"agent:use", "admin"}})
	cs2, err := connect(t, srv.URL, admin.HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	if text, err := callText(t, cs2, "admin", map[string]any{}); err != nil || text != "admin done" {
		t.Fatalf("admin with its scope: %q, %v", text, err)
	}
}
