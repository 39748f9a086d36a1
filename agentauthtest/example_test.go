package agentauthtest_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/agentauthtest"
)

// An MCP server's test puts serve's gateway in front of the server under
// test (here one made with the Go SDK) and calls it as an authorized
// client would. In a test, agentauthtest.NewServer(t, …) starts it and
// t.Cleanup stops it; Start and Close do the same outside a test.
func Example() {
	app := mcp.NewServer(&mcp.Implementation{Name: "app", Version: "1"}, nil)
	mcp.AddTool(app, &mcp.Tool{Name: "hello"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return app }, nil)

	srv, err := agentauthtest.Start(context.Background(), agentauthtest.WithHandler(handler))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	// A request without a token gets the MCP authorization challenge.
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status, strings.Contains(resp.Header.Get("WWW-Authenticate"), srv.ResourceMetadata))

	// A token from a whole authorization code grant, as user bob.
	tok, err := srv.AuthorizationCode(context.Background(), agentauthtest.TokenRequest{Subject: "bob"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.TokenType, tok.Subject, tok.Scopes)

	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: tok.HTTPClient()}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// 401 Unauthorized true
	// Bearer bob [agent:use]
	// hello
}

// A tool that needs a scope answers a token without it with 403
// insufficient_scope, the challenge an MCP client steps up on.
func ExampleWithToolScope() {
	srv, err := agentauthtest.Start(context.Background(), agentauthtest.WithToolScope("whoami", "admin"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	tok, err := srv.AuthorizationCode(context.Background(), agentauthtest.TokenRequest{})
	if err != nil {
		log.Fatal(err)
	}
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	tok.SetAuth(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	fmt.Println(strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`), strings.Contains(resp.Header.Get("WWW-Authenticate"), `scope="admin"`))
	// Output:
	// 403 Forbidden
	// true true
}

// Revoking a grant (RFC 7009) makes the endpoint refuse its tokens at once.
func ExampleServer_Revoke() {
	srv, err := agentauthtest.Start(context.Background(), agentauthtest.WithDPoP())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	tok, err := srv.DeviceCode(ctx, agentauthtest.TokenRequest{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.TokenType, tok.Subject)
	if err := srv.Revoke(ctx, tok); err != nil {
		log.Fatal(err)
	}
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	tok.SetAuth(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// DPoP alice
	// 401 Unauthorized
}

// Your handler learns whom the gateway let through from its identity
// assertion; Caller checks it as your server would.
func ExampleServer_Caller() {
	var srv *agentauthtest.Server
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := srv.Caller(r.Context(), r.Header)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Println("caller:", c.Subject, c.Scopes)
		http.Error(w, "not an MCP server", http.StatusNotFound)
	})
	srv, err := agentauthtest.Start(context.Background(), agentauthtest.WithHandler(handler))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	tok, err := srv.AuthorizationCode(context.Background(), agentauthtest.TokenRequest{Subject: "erin"})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := tok.HTTPClient().Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	// Output:
	// caller: erin [agent:use]
}
