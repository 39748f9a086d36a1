// Package app is the MCP server under test: tool greet for anyone the
// gateway lets through, tool deploy for those it lets through with
// scope deploy (its policy, set by whoever runs the gateway).
package app

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler serves the MCP server over Streamable HTTP.
func Handler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpapp", Version: "1.0.0"}, nil)
	type greetIn struct {
		Name string `json:"name" jsonschema:"whom to greet"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return text("hello, " + in.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "deploy", Description: "Deploys (needs scope deploy at the gateway)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return text("deployed"), nil, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
