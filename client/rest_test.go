package client

import "testing"

func TestRESTResource(t *testing.T) {
	const target = "http://127.0.0.1:7788"
	tests := []struct{ metadata, want string }{
		{"http://127.0.0.1:7788/.well-known/oauth-protected-resource/mcp", "http://127.0.0.1:7788/mcp"},
		{"http://127.0.0.1:7788/.well-known/oauth-protected-resource", "http://127.0.0.1:7788"},
		{"", target},
		{"http://evil.example/.well-known/oauth-protected-resource/mcp", target},       // another origin
		{"http://127.0.0.1:7788/.well-known/oauth-protected-resourcex/mcp", target},    // not the well-known path
		{"http://127.0.0.1:7788/.well-known/oauth-protected-resource/mcp?x=1", target}, // a query is not a resource path
		{"http://127.0.0.1:7788/meta.json", target},
	}
	for _, tt := range tests {
		if got := restResource(target, tt.metadata); got != tt.want {
			t.Errorf("restResource(%q) = %q, want %q", tt.metadata, got, tt.want)
		}
	}
}
