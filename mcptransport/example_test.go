package mcptransport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/agentauthtest"
	"github.com/agentauth/agentauth/mcptransport"
	"github.com/agentauth/agentauth/store"
)

// A Go SDK client authorized by the transport. Here the server is a test
// server whose sign-in needs no person, and the credentials live in
// memory; with Options{} the transport uses the credentials of
// `agentauth login` and opens no browser (the login URL goes to stderr).
func Example() {
	srv, err := agentauthtest.Start(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	t, err := mcptransport.New(mcptransport.Options{
		Store:   store.NewMemory(),
		Browser: srv.Browser("bob"),
		Output:  io.Discard,
	})
	if err != nil {
		log.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   srv.URL,
		HTTPClient: &http.Client{Transport: t},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, tool := range tools.Tools {
		fmt.Println(tool.Name)
	}
	// Output:
	// whoami
	// echo
}

// The transport steps up when a tool needs more scope than the token
// holds (403 insufficient_scope): it logs in again for both, and the
// call succeeds.
func Example_stepUp() {
	srv, err := agentauthtest.Start(context.Background(), agentauthtest.WithToolScope("whoami", "admin"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	t, err := mcptransport.New(mcptransport.Options{Store: store.NewMemory(), Browser: srv.Browser(""), Output: io.Discard})
	if err != nil {
		log.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: t}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		log.Fatal(err)
	}
	var who struct {
		Schemes []struct {
			Subject string   `json:"subject"`
			Scopes  []string `json:"scopes"`
		} `json:"schemes"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &who); err != nil {
		log.Fatal(err)
	}
	fmt.Println(who.Schemes[0].Subject, who.Schemes[0].Scopes)
	// Output:
	// alice [agent:use admin]
}
