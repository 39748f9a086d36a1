package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/agentauthtest"
	"github.com/agentauth/agentauth/mcptransport"
	"github.com/agentauth/agentauth/store"

	"example.com/mcpapp/app"
)

func session(t *testing.T, url string, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "app-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func call(cs *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// Behind the gateway the app is reached with a token only; a token of
// the code grant (any subject) or of the device grant works.
func TestGreetBehindTheGateway(t *testing.T) {
	var srv *agentauthtest.Server
	callers := make(chan string, 10)
	h := app.Handler()
	srv = agentauthtest.NewServer(t, agentauthtest.WithHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The gateway names the caller to the app.
		if c, err := srv.Caller(r.Context(), r.Header); err != nil {
			t.Errorf("a request without the gateway's assertion: %v", err)
		} else {
			select {
			case callers <- c.Subject:
			default:
			}
		}
		h.ServeHTTP(w, r)
	})))
	if _, err := session(t, srv.URL, http.DefaultClient); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("no token: %v; want 401", err)
	}
	tok := srv.Token(t, agentauthtest.TokenRequest{Subject: "carol"})
	cs, err := session(t, srv.URL, tok.HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := call(cs, "greet", map[string]any{"name": "carol"}); err != nil || got != "hello, carol" {
		t.Fatalf("greet: %q, %v", got, err)
	}
	if who := <-callers; who != "carol" {
		t.Fatalf("the gateway named %q to the app, want carol", who)
	}
	dev, err := srv.DeviceCode(context.Background(), agentauthtest.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := session(t, srv.URL, dev.HTTPClient()); err != nil {
		t.Fatalf("device grant token: %v", err)
	}
}

// deploy needs scope deploy: a token without it gets 403
// insufficient_scope, a client with mcptransport steps up and succeeds.
func TestDeployNeedsItsScope(t *testing.T) {
	srv := agentauthtest.NewServer(t, agentauthtest.WithHandler(app.Handler()),
		agentauthtest.WithToolScope("deploy", "deploy"), agentauthtest.WithDPoP())
	cs, err := session(t, srv.URL, srv.Token(t, agentauthtest.TokenRequest{}).HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := call(cs, "deploy", nil); err == nil || !strings.Contains(err.Error(), "insufficient") {
		t.Fatalf("deploy without its scope: %q, %v", got, err)
	}

	tr, err := mcptransport.New(mcptransport.Options{Store: store.NewMemory(), Browser: srv.Browser("dave"), Output: io.Discard, DPoP: true})
	if err != nil {
		t.Fatal(err)
	}
	cs, err = session(t, srv.URL, &http.Client{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := call(cs, "deploy", nil); err != nil || got != "deployed" {
		t.Fatalf("deploy through mcptransport: %q, %v", got, err)
	}
}

// A revoked grant's token no longer reaches the app.
func TestRevokedTokenIsRefused(t *testing.T) {
	srv := agentauthtest.NewServer(t, agentauthtest.WithHandler(app.Handler()), agentauthtest.WithCIMD())
	tok := srv.Token(t, agentauthtest.TokenRequest{})
	if _, err := session(t, srv.URL, tok.HTTPClient()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Revoke(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if _, err := session(t, srv.URL, tok.HTTPClient()); err == nil {
		t.Fatal("a revoked token reached the app")
	}
}
