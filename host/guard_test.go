package host

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGuard(t *testing.T) {
	var reached *http.Request
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = r })
	newGuard := func(t *testing.T, opts GuardOptions) http.Handler {
		t.Helper()
		opts.OriginPaths = []string{"/mcp"}
		opts.HostHint, opts.OriginHint = "HOST HINT", "ORIGIN HINT"
		g, err := NewGuard(next, opts)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	loopback := newGuard(t, GuardOptions{Addr: "127.0.0.1:7777"})
	proxied := newGuard(t, GuardOptions{Addr: "127.0.0.1:7777", PublicOrigins: []string{"https://Agents.Example"}, AllowedOrigins: []string{"https://app.example:8443"}})
	wildcard := newGuard(t, GuardOptions{Addr: "[::]:7777"})
	port80 := newGuard(t, GuardOptions{Addr: "127.0.0.1:80"})
	named := newGuard(t, GuardOptions{Addr: "10.1.2.3:7777"})

	upgrade := http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}
	tests := []struct {
		name   string
		g      http.Handler
		path   string
		host   string
		origin string
		header http.Header
		want   int // 0: passed on
	}{
		{"listener address", loopback, "/token", "127.0.0.1:7777", "", nil, 0},
		{"localhost", loopback, "/token", "localhost:7777", "", nil, 0},
		{"localhost in capitals", loopback, "/token", "LocalHost:7777", "", nil, 0},
		{"IPv6 loopback", loopback, "/token", "[::1]:7777", "", nil, 0},
		{"another loopback address", loopback, "/token", "127.0.0.2:7777", "", nil, 0},
		{"rebound name", loopback, "/authorize", "evil.example:7777", "", nil, 421},
		{"rebound name without port", loopback, "/mcp", "evil.example", "", nil, 421},
		{"localhost on another port", loopback, "/token", "localhost:8888", "", nil, 421},
		{"no Host", loopback, "/token", "", "", nil, 421},
		{"WebSocket upgrade to a rebound name", loopback, "/", "evil.example", "http://evil.example", upgrade, 421},
		{"port 80 without port", port80, "/token", "localhost", "", nil, 0},
		{"public origin", proxied, "/mcp", "agents.example", "", nil, 0},
		{"public origin with its default port", proxied, "/mcp", "agents.example:443", "", nil, 0},
		{"public origin on another port", proxied, "/mcp", "agents.example:8443", "", nil, 421},
		{"wildcard listener, IP literal", wildcard, "/mcp", "192.168.1.5:7777", "", nil, 0},
		{"wildcard listener, name", wildcard, "/mcp", "evil.example:7777", "", nil, 421},
		{"named listener, loopback Host", named, "/mcp", "127.0.0.1:7777", "", nil, 421},
		{"named listener, its address", named, "/mcp", "10.1.2.3:7777", "", nil, 0},

		{"own Origin on /mcp", loopback, "/mcp", "127.0.0.1:7777", "http://127.0.0.1:7777", nil, 0},
		{"localhost Origin on /mcp", loopback, "/mcp", "127.0.0.1:7777", "http://localhost:7777", nil, 0},
		{"foreign Origin on /mcp", loopback, "/mcp", "127.0.0.1:7777", "http://evil.example.com", nil, 403},
		{"own host over https on /mcp", loopback, "/mcp", "127.0.0.1:7777", "https://127.0.0.1:7777", nil, 403},
		{"null Origin on /mcp", loopback, "/mcp", "127.0.0.1:7777", "null", nil, 403},
		{"two Origins on /mcp", loopback, "/mcp", "127.0.0.1:7777", "", http.Header{"Origin": {"http://127.0.0.1:7777", "http://evil.example"}}, 403},
		{"foreign Origin on the metadata", loopback, "/.well-known/oauth-protected-resource/mcp", "127.0.0.1:7777", "http://evil.example", nil, 0},
		{"foreign Origin on a WebSocket upgrade", loopback, "/", "127.0.0.1:7777", "http://evil.example", upgrade, 403},
		{"own Origin on a WebSocket upgrade", loopback, "/ws", "127.0.0.1:7777", "http://127.0.0.1:7777", upgrade, 0},
		{"public origin as Origin", proxied, "/mcp", "agents.example", "https://agents.example", nil, 0},
		{"allowed origin", proxied, "/mcp", "127.0.0.1:7777", "https://APP.example:8443", nil, 0},
		{"allowed origin's host on another port", proxied, "/mcp", "127.0.0.1:7777", "https://app.example", nil, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reached = nil
			r := httptest.NewRequest(http.MethodPost, "http://x"+tt.path, nil)
			r.Host = tt.host
			for k, vs := range tt.header {
				r.Header[k] = vs
			}
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			w := httptest.NewRecorder()
			tt.g.ServeHTTP(w, r)
			if tt.want == 0 {
				if reached == nil {
					t.Fatalf("refused: %d %s", w.Code, w.Body)
				}
				want := r.Header.Get("Origin")
				if o, ok := GuardedOrigin(reached.Context()); o != want || ok != (want != "") {
					t.Errorf("context origin = %q, %t; want %q", o, ok, want)
				}
				if want == "" && reached != r {
					t.Error("a request without Origin was copied; want it passed on as it came")
				}
				return
			}
			if reached != nil || w.Code != tt.want {
				t.Fatalf("got %d (passed on: %t), want %d", w.Code, reached != nil, tt.want)
			}
			hint := map[int]string{421: "HOST HINT", 403: "ORIGIN HINT"}[tt.want]
			if body := w.Body.String(); !strings.HasSuffix(body, "\n"+hint+"\n") || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
				t.Errorf("body %q, want the fix %q on a line of its own", body, hint)
			}
		})
	}
}

func TestGuardOptions(t *testing.T) {
	for _, opts := range []GuardOptions{
		{Addr: "127.0.0.1:0"},
		{Addr: "127.0.0.1"},
		{Addr: "127.0.0.1:7777", PublicOrigins: []string{"agents.example"}},
		{Addr: "127.0.0.1:7777", AllowedOrigins: []string{"https://app.example/path"}},
	} {
		if _, err := NewGuard(http.NotFoundHandler(), opts); err == nil {
			t.Errorf("%+v: no error", opts)
		}
	}
}

func TestNormalizeOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://Agents.Example":      "https://agents.example",
		"https://agents.example:443":  "https://agents.example",
		"http://agents.example:80/":   "http://agents.example",
		"http://[::1]:7777":           "http://[::1]:7777",
		"http://[::1]:80":             "http://[::1]",
		"null":                        "",
		"ftp://agents.example":        "",
		"https://user@agents.example": "",
		"https://agents.example?x":    "",
		"https://agents.example#x":    "",
	} {
		got, err := NormalizeOrigin(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
