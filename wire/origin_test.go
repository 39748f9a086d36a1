package wire

import "testing"

func TestOrigin(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ws://127.0.0.1:7777", "http://127.0.0.1:7777"},
		{"WS://Example.COM:80/x?tkn=1", "http://example.com"},
		{"wss://example.com:443/", "https://example.com"},
		{"https://example.com:8443/mcp", "https://example.com:8443"},
		{"http://[::1]:9/mcp", "http://[::1]:9"},
		{"stdio:agentauth serve --stdio", ""},
		{"urn:example:mcp", ""},
		{"ftp://example.com/", ""},
		{"http:///nohost", ""},
	} {
		if got := Origin(tc.in); got != tc.want {
			t.Errorf("Origin(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"ws://127.0.0.1:7777", "http://127.0.0.1:7777/mcp", true},
		{"wss://h.example", "https://h.example:443/mcp", true},
		{"ws://127.0.0.1:7777", "http://127.0.0.1:7778/mcp", false},
		{"ws://127.0.0.1:7777", "http://localhost:7777/mcp", false},
		{"ws://h.example", "https://h.example/mcp", false},
		{"stdio:x", "stdio:x", false},
	} {
		if got := SameOrigin(tc.a, tc.b); got != tc.want {
			t.Errorf("SameOrigin(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
