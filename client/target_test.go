package client

import (
	"errors"
	"testing"
)

func TestNormalizeTarget(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"ws://127.0.0.1:7777", "ws://127.0.0.1:7777"},
		{"ws://127.0.0.1:7777/", "ws://127.0.0.1:7777"},
		{"WS://LocalHost:7777/", "ws://localhost:7777"},
		{"wss://host.example:443", "wss://host.example"},
		{"ws://host.example:80/ws?tkn=x", "ws://host.example/ws?tkn=x"},
		{"https://MCP.example.com:443/mcp", "https://mcp.example.com/mcp"},
		{"http://h:8080/mcp/", "http://h:8080/mcp/"},
		{"http://h:8080/", "http://h:8080"},
		{"ws://[::1]:7777/", "ws://[::1]:7777"},
		{"stdio:agentauth serve --stdio", "stdio:agentauth serve --stdio"},
		{"127.0.0.1:7777", "127.0.0.1:7777"},
	} {
		if got := NormalizeTarget(tt.in); got != tt.want {
			t.Errorf("NormalizeTarget(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLoopbackIP(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"ws://localhost:7777", "ws://127.0.0.1:7777"},
		{"http://LOCALHOST/mcp", "http://127.0.0.1/mcp"},
		{"ws://127.0.0.1:7777", "ws://127.0.0.1:7777"},
		{"ws://localhost.example:1", "ws://localhost.example:1"},
		{"stdio:localhost", "stdio:localhost"},
	} {
		if got := LoopbackIP(tt.in); got != tt.want {
			t.Errorf("LoopbackIP(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"ws://127.0.0.1:7777", true}, {"wss://h", true}, {"https://h/mcp", true}, {"HTTP://h/mcp", true},
		{"stdio:agent --x", true}, {"stdio:", false}, {"stdio:   ", false},
		{"127.0.0.1:7777", false}, {"localhost:7777", false}, {"[::1]:7777", false},
		{"ws://", false}, {"ws://:7777", false}, {"ws://h:99999", false}, {"ws://h:0", false}, {"ws://u:p@h", false},
		{"ws://h/mcp", false}, {"ws://h/mcp/", false}, {"ws://h/ws", true}, {"ftp://h", false},
	} {
		err := CheckTarget(tt.in)
		var ue *UsageError
		if (err == nil) != tt.ok || err != nil && !errors.As(err, &ue) {
			t.Errorf("CheckTarget(%q) = %v, want ok=%v (a *UsageError otherwise)", tt.in, err, tt.ok)
		}
	}
}
