package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// gatewayBackend is a Backend that is no agent host, as a gateway's would
// be: whoami answers the grant's subject, one tool of its own.
type gatewayBackend struct{ calls []string }

func (b *gatewayBackend) Answer(_ context.Context, req *wire.Message, g *resource.Grant) *wire.Message {
	m, _ := wire.NewResult(req.ID, map[string]string{"method": req.Method, "subject": g.Subject})
	return m
}

func (b *gatewayBackend) Tools() []Tool {
	return []Tool{{Name: "backend_tool", Title: "Backend tool", Description: "A tool of the backend.", InputSchema: json.RawMessage(`{"type":"object"}`)}}
}

func (b *gatewayBackend) CallTool(_ context.Context, g *resource.Grant, name string, _, _ map[string]json.RawMessage, _ Request) (map[string]any, *wire.Error) {
	b.calls = append(b.calls, name+" for "+g.Subject)
	return ToolText("done", false), nil
}

func newGatewayFace(b Backend) http.Handler {
	alice := &resource.Grant{Subject: "alice"}
	return New(Options{
		Resource:    "http://127.0.0.1:7777/mcp",
		MetadataURL: "http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp",
		Metadata: func() wire.ProtectedResourceMetadata {
			return wire.ProtectedResourceMetadata{Resource: "http://127.0.0.1:7777/mcp"}
		},
		Verify: func(_ context.Context, token string) (*resource.Grant, *resource.Refusal) {
			if token == "t-alice" {
				return alice, nil
			}
			return nil, &resource.Refusal{Status: http.StatusUnauthorized, Challenge: map[string]string{},
				Err: wire.Errorf(wire.CodeAuthRequired, "authentication required")}
		},
		Backend: b,
	})
}

func postMCP(t *testing.T, h http.Handler, token, body string) (*httptest.ResponseRecorder, *wire.Message) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:7777/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var m wire.Message
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("answer %d %q: %v", rec.Code, rec.Body, err)
	}
	return rec, &m
}

// The MCP face serves a Backend that is not the agent host: whoami goes
// through its Answer with the request's grant, its own tools are listed
// and called, and a request without a token never reaches it.
func TestFaceWithAnotherBackend(t *testing.T) {
	b := &gatewayBackend{}
	face := newGatewayFace(b)

	rec, m := postMCP(t, face, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Header().Get("WWW-Authenticate"), "resource_metadata=") || m.Error == nil {
		t.Fatalf("no token: %d %q %s", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
	}

	_, m = postMCP(t, face, "t-alice", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var list struct {
		Tools []Tool `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &list); err != nil || len(list.Tools) == 0 || list.Tools[len(list.Tools)-1].Name != "backend_tool" {
		t.Fatalf("tools/list: %s, want the backend's tool last", m.Result)
	}

	_, m = postMCP(t, face, "t-alice", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if m.Error != nil || !strings.Contains(string(m.Result), `\"subject\":\"alice\"`) || !strings.Contains(string(m.Result), `\"method\":\"whoami\"`) {
		t.Errorf("whoami: %s %v, want the backend's whoami for alice", m.Result, m.Error)
	}

	_, m = postMCP(t, face, "t-alice", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"backend_tool","arguments":{}}}`)
	if m.Error != nil || len(b.calls) != 1 || b.calls[0] != "backend_tool for alice" {
		t.Errorf("backend_tool: %s %v, calls %q", m.Result, m.Error, b.calls)
	}
}
