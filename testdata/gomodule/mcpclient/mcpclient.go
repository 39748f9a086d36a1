// Package mcpclient is a command-line MCP client made with the Go SDK and
// authorized by agentauth's mcptransport: it shares agentauth's
// credential store, so `agentauth login` serves it, and it logs in itself
// (opening $BROWSER) when the server asks.
package mcpclient

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/mcptransport"
)

// Main runs mcpclient [-client-id ID] [-scope S] URL TOOL [ARGS-JSON]: it
// calls TOOL and prints its text content; it exits 1 on failure.
func Main() int {
	fs := flag.NewFlagSet("mcpclient", flag.ContinueOnError)
	clientID := fs.String("client-id", "", "a pre-registered OAuth client id")
	scope := fs.String("scope", "", "a scope to ask for besides the server's")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() < 2 || fs.NArg() > 3 {
		fmt.Fprintln(os.Stderr, "usage: mcpclient [-client-id ID] [-scope S] URL TOOL [ARGS-JSON]")
		return 2
	}
	opts := mcptransport.Options{ClientID: *clientID}
	if *scope != "" {
		opts.Scopes = []string{*scope}
	}
	if b := os.Getenv("BROWSER"); b != "" {
		opts.Browser = func(url string) error { return exec.Command(b, url).Run() }
	}
	t, err := mcptransport.New(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpclient:", err)
		return 1
	}
	args := map[string]any{}
	if fs.NArg() == 3 {
		if err := json.Unmarshal([]byte(fs.Arg(2)), &args); err != nil {
			fmt.Fprintln(os.Stderr, "mcpclient: ARGS-JSON:", err)
			return 2
		}
	}
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpclient", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: fs.Arg(0), HTTPClient: &http.Client{Transport: t}}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpclient:", err)
		return 1
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fs.Arg(1), Arguments: args})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpclient:", err)
		return 1
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			fmt.Println(tc.Text)
		}
	}
	if res.IsError {
		return 1
	}
	return 0
}
