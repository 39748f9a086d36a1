package commands

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/internal/syncbuf"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/server"
	"github.com/agentauth/agentauth/state"
)

func TestServeFlags(t *testing.T) {
	stateHome := t.TempDir()
	t.Setenv("XDG_STATE_HOME", stateHome)
	defaults := ServeOptions{Options: server.Options{Listen: "127.0.0.1:7777", AuthScope: "connection", DevUser: issuer.DefaultSubject, LogLevel: slog.LevelInfo,
		TokenTTL: issuer.DefaultTokenTTL, RefreshTTL: issuer.DefaultRefreshTTL, CodeTTL: issuer.DefaultCodeTTL, DeviceInterval: issuer.DefaultDeviceInterval,
		KeyRotation: issuer.DefaultKeyRotation, RevocationReconcile: state.DefaultReconcileEvery, RevocationStaleness: defaultRevocationStaleness, LogFormat: "text",
		TrustedProxyHeader: "X-Forwarded-For", CIMD: issuer.CIMDOptions{Mode: issuer.CIMDFetch}}}
	if runtime.GOOS == "linux" {
		defaults.DataDir = filepath.Join(stateHome, "agentauth", "serve")
	} else {
		defaults.DataDir, _ = defaultDataDir()
	}
	with := func(change func(*ServeOptions)) ServeOptions {
		o := defaults
		change(&o)
		return o
	}
	checkFlags(t, []flagCase[ServeOptions]{
		{args: []string{}, want: defaults},
		{args: []string{}, verbose: true, want: with(func(o *ServeOptions) { o.LogLevel = slog.LevelDebug })},
		{args: []string{"--log-level", "debug"}, want: with(func(o *ServeOptions) { o.LogLevel = slog.LevelDebug })},
		{args: []string{"--log-level", "warn"}, verbose: true, want: with(func(o *ServeOptions) { o.LogLevel = slog.LevelWarn })},
		{args: []string{"--log-level", "error"}, want: with(func(o *ServeOptions) { o.LogLevel = slog.LevelError })},
		{args: []string{"--log-level", "loud"}, wantCode: ExitUsage},
		{args: []string{"--listen", "127.0.0.1:0", "--addr-file", "addr", "--config", "c.json", "--auth-scope", "host",
			"--connection-token", "gate", "--log-file", "serve.log", "--resource", "http://127.0.0.1:1/rs"},
			want: with(func(o *ServeOptions) {
				o.Listen, o.AddrFile, o.ConfigPath, o.AuthScope, o.ConnectionToken, o.LogFile, o.Resource =
					"127.0.0.1:0", "addr", "c.json", "host", "gate", "serve.log", "http://127.0.0.1:1/rs"
			})},
		{args: []string{"--stdio", "--auto-approve", "--dev-user", "bob", "--token-ttl", "5m", "--device-interval", "1s"},
			want: with(func(o *ServeOptions) {
				o.Stdio, o.AutoApprove, o.DevUser, o.TokenTTL, o.DeviceInterval = true, true, "bob", 5*time.Minute, time.Second
				o.IssuerFlags = []string{"--auto-approve", "--dev-user", "--token-ttl", "--device-interval"}
			})},
		{args: []string{"--issuer", "https://as.example"}, want: with(func(o *ServeOptions) { o.Issuer = "https://as.example" })},
		{args: []string{"--public-origin", "https://agents.example", "--public-origin", "http://10.0.0.5:8080", "--allowed-origin", "https://app.example"},
			want: with(func(o *ServeOptions) {
				o.PublicOrigins, o.AllowedOrigins = []string{"https://agents.example", "http://10.0.0.5:8080"}, []string{"https://app.example"}
			})},
		{args: []string{"--log-format", "json", "--metrics-listen", ":9090", "--tls-cert", "c.pem", "--tls-key", "k.pem",
			"--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "127.0.0.1"},
			want: with(func(o *ServeOptions) {
				o.LogFormat, o.MetricsListen, o.TLSCert, o.TLSKey = "json", ":9090", "c.pem", "k.pem"
				o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
			})},
		{args: []string{"--cimd", "off"}, want: with(func(o *ServeOptions) {
			o.CIMD, o.IssuerFlags = issuer.CIMDOptions{Mode: issuer.CIMDOff}, []string{"--cimd"}
		})},
		{args: []string{"--cimd-host", "claude.ai", "--cimd-host", "chatgpt.com"}, want: with(func(o *ServeOptions) {
			o.CIMD, o.IssuerFlags = issuer.CIMDOptions{Mode: issuer.CIMDFetch, Hosts: []string{"claude.ai", "chatgpt.com"}}, []string{"--cimd-host"}
		})},
		{args: []string{"--cimd", "sometimes"}, wantCode: ExitUsage},
		{args: []string{"--cimd", "off", "--cimd-host", "claude.ai"}, wantCode: ExitUsage},
		{args: []string{"--cimd", "pinned"}, wantCode: ExitUsage},
		{args: []string{"--cimd-document", "missing.json"}, wantCode: ExitUsage},
		{args: []string{"--log-format", "xml"}, wantCode: ExitUsage},
		{args: []string{"--tls-cert", "c.pem"}, wantCode: ExitUsage},
		{args: []string{"--stdio", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, wantCode: ExitUsage},
		{args: []string{"--trusted-proxy", "proxy.example"}, wantCode: ExitUsage},
		{args: []string{"--trusted-proxy", "10.0.0.0/8", "--trusted-proxy-header", "forwarded"},
			want: with(func(o *ServeOptions) {
				o.TrustedProxies, o.TrustedProxyHeader = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "Forwarded"
			})},
		{args: []string{"--trusted-proxy-header", "X-Real-IP"}, wantCode: ExitUsage},
		{args: []string{"--trusted-proxy", "10.0.0.0/8", "--trusted-proxy-header", "Host"}, wantCode: ExitUsage},
		{args: []string{"--metrics-listen", ""}, wantCode: ExitUsage},
		{args: []string{"--public-origin", "agents.example"}, wantCode: ExitUsage},
		{args: []string{"--public-origin", "https://agents.example/mcp"}, wantCode: ExitUsage},
		{args: []string{"--allowed-origin", "null"}, wantCode: ExitUsage},
		{args: []string{"extra"}, wantCode: ExitUsage},
		{args: []string{"--bogus"}, wantCode: ExitUsage},
		{args: []string{"--auth-scope", "everyone"}, wantCode: ExitUsage},
		{args: []string{"--listen", ""}, wantCode: ExitUsage},
		{args: []string{"--config", ""}, wantCode: ExitUsage},
		{args: []string{"--connection-token", ""}, wantCode: ExitUsage},
		{args: []string{"--stdio", "--connection-token", "gate"}, wantCode: ExitUsage},
		{args: []string{"--conformance-fixtures"}, want: with(func(o *ServeOptions) { o.ConformanceFixtures = true })},
		{args: []string{"--conformance-fixtures", "--backend", "http://127.0.0.1:1/mcp"}, wantCode: ExitUsage},
		{args: []string{"--code-ttl", "500ms"}, wantCode: ExitUsage},
		{args: []string{"--resource", "http://127.0.0.1:1/mcp#frag"}, wantCode: ExitUsage},
		{args: []string{"--issuer", "http://as.example"}, wantCode: ExitUsage},
		{args: []string{"--issuer", "https://as.example", "--config", "c.json"}, wantCode: ExitUsage},
		{args: []string{"--issuer", "https://as.example", "--auto-approve"}, wantCode: ExitUsage},
		{args: []string{"--ephemeral"}, want: with(func(o *ServeOptions) { o.DataDir = "" })},
		{args: []string{"--data-dir", ""}, want: with(func(o *ServeOptions) { o.DataDir = "" })},
		{args: []string{"--data-dir", "st", "--state-key-file", "k", "--key-rotation", "24h"}, want: with(func(o *ServeOptions) {
			o.DataDir, o.StateKeyFile, o.KeyRotation = "st", "k", 24*time.Hour
			o.IssuerFlags = []string{"--state-key-file", "--key-rotation"}
		})},
		{args: []string{"--database", "postgres://db.example/agentauth"}, want: with(func(o *ServeOptions) {
			o.DataDir, o.Database = "", "postgres://db.example/agentauth"
		})},
		{args: []string{"--issuer", "https://as.example", "--data-dir", "st"}, want: with(func(o *ServeOptions) { o.Issuer, o.DataDir = "https://as.example", "st" })},
		{args: []string{"--database", "mysql://db.example/agentauth"}, wantCode: ExitUsage},
		{args: []string{"--data-dir", "st", "--ephemeral"}, wantCode: ExitUsage},
		{args: []string{"--data-dir", "st", "--database", "postgres://db.example/a"}, wantCode: ExitUsage},
		{args: []string{"--state-key-file", ""}, wantCode: ExitUsage},
		{args: []string{"--key-rotation", "1s"}, wantCode: ExitUsage},
		{args: []string{"--state-key-keyring"}, want: with(func(o *ServeOptions) { o.StateKeyKeyring, o.IssuerFlags = true, []string{"--state-key-keyring"} })},
		{args: []string{"--state-key-keyring", "--state-key-file", "k"}, wantCode: ExitUsage},
		{args: []string{"--issuer", "https://as.example", "--state-key-file", "k"}, wantCode: ExitUsage},
	}, serveCommand, func(f *Factory, o *ServeOptions) bool {
		ok := o.IO == f.IO && o.HTTPClient == f.HTTPClient && o.Now != nil && o.Credentials != nil
		o.IO, o.HTTPClient, o.Now, o.Credentials = nil, nil, nil, nil
		return ok
	}, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }))
}

// serveConfigJSON is a static configuration: serve --stdio with it opens
// no listener.
const serveConfigJSON = `{"schemes": [{"id": "dev", "authorizationServers": ["embedded"], "scopesSupported": ["agent:use"],
  "validation": {"type": "static", "tokens": [{"token": "t-alice", "subject": "alice", "scopes": ["agent:use"]}]}}],
 "methodScopes": {"disposeSession": ["agent:admin"]}}`

// TestServe runs the serve command with test streams: a session on stdio
// (stdin carries the requests, stdout exactly one answer per request, logs
// on stderr without the token) and the refusals of bad configurations.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := write("cfg.json", serveConfigJSON)
	lines := func(msgs ...string) string { return strings.Join(msgs, "\n") + "\n" }
	const (
		initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`
		whoami     = `{"jsonrpc":"2.0","id":3,"method":"whoami"}`
	)
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		// stdout lists one pattern per line of stdout.
		stdout []string
		stderr []string
	}{{
		name: "stdio session",
		args: []string{"serve", "--stdio", "--config", cfg},
		stdin: lines(`{"jsonrpc":"2.0","id":0,"method":"whoami"}`, initialize, `{"jsonrpc":"2.0","id":2,"method":"whoami"}`, `not json`,
			`{"jsonrpc":"2.0","id":"a","method":"authenticate","params":{"schemeId":"dev","scheme":"bearer","token":"t-alice"}}`, whoami,
			`{"jsonrpc":"2.0","id":4,"method":"disposeSession","params":{"sessionId":"s1"}}`),
		stdout: []string{
			`^\{"jsonrpc":"2.0","id":0,"error":\{"code":-32600,"message":"invalid request: call initialize before whoami"\}\}$`,
			`^\{"jsonrpc":"2.0","id":1,"result":\{.*"resourceMetadata":\{"resource":"http://127.0.0.1:7777/mcp","authSchemes":\[\{"scheme":"bearer","id":"dev"`,
			`^\{"jsonrpc":"2.0","id":2,"error":\{"code":-32007,.*"error":"invalid_request"`,
			`^\{"jsonrpc":"2.0","error":\{"code":-32700,"message":"parse error: not JSON"\},"id":null\}$`,
			`^\{"jsonrpc":"2.0","id":"a","result":\{"authenticated":true\}\}$`,
			`^\{"jsonrpc":"2.0","id":3,"result":\{"schemes":\[\{"schemeId":"dev","subject":"alice","scopes":\["agent:use"\]\}\]\}\}$`,
			`^\{"jsonrpc":"2.0","id":4,"error":\{"code":-32007,.*"error":"insufficient_scope","errorDescription":"disposeSession needs scope agent:admin","scope":"agent:admin"`,
		},
		stderr: []string{`msg="connection opened" conn=1 transport=stdio`, `msg="auth decision" conn=1 scheme=dev subject=alice outcome=accepted`,
			`msg="connection closed" conn=1 reason="closed by peer"`},
	}, {
		name:   "deprecated setAuthToken",
		args:   []string{"serve", "--stdio", "--config", cfg},
		stdin:  lines(initialize, `{"jsonrpc":"2.0","method":"setAuthToken","params":{"token":"t-alice"}}`, whoami),
		stdout: []string{`"id":1,"result"`, `^\{"jsonrpc":"2.0","id":3,"result":\{"schemes":\[\{"schemeId":"dev","subject":"alice"`},
		stderr: []string{`level=WARN msg="setAuthToken is deprecated: use the authenticate request instead" conn=1`},
	}, {
		name:   "config with an unknown key",
		args:   []string{"serve", "--stdio", "--config", write("typo.json", `{"schemes": [{"id": "dev", "validation": {"type": "static", "tokns": []}}]}`)},
		code:   ExitError,
		stderr: []string{`typo.json: schemes\[0\].validation.tokns: unknown key`},
	}, {
		name:   "config with a bad duration",
		args:   []string{"serve", "--stdio", "--config", write("dur.json", `{"schemes": [{"id": "dev", "validation": {"type": "introspection", "cacheTTL": "soon"}}]}`)},
		code:   ExitError,
		stderr: []string{`schemes\[0\].validation.cacheTTL: "soon" is not a duration`},
	}, {
		name:   "missing config",
		args:   []string{"serve", "--stdio", "--config", filepath.Join(dir, "nope.json")},
		code:   ExitError,
		stderr: []string{`cannot read config`},
	}, {
		name:   "embedded issuer flag without the embedded issuer",
		args:   []string{"serve", "--stdio", "--config", cfg, "--auto-approve"},
		code:   ExitUsage,
		stderr: []string{`--auto-approve configure the embedded issuer, and no scheme uses it`},
	}, {
		name:   "addr-file without a listener",
		args:   []string{"serve", "--stdio", "--config", cfg, "--addr-file", filepath.Join(dir, "addr")},
		code:   ExitUsage,
		stderr: []string{`--addr-file applies to the listener`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
			f := &Factory{IO: &IOStreams{In: strings.NewReader(tt.stdin), Out: out, ErrOut: errOut}, HTTPClient: &http.Client{}, Now: time.Now}
			if code := Run(f, append([]string{"agentauth"}, tt.args...)); code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, errOut)
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if out.String() == "" {
				got = nil
			}
			if len(got) != len(tt.stdout) {
				t.Fatalf("%d lines on stdout, want %d:\n%s", len(got), len(tt.stdout), out)
			}
			for i, re := range tt.stdout {
				if !regexp.MustCompile(re).MatchString(got[i]) {
					t.Errorf("stdout line %d:\n%s\nwant it to match %s", i+1, got[i], re)
				}
			}
			for _, re := range tt.stderr {
				if !regexp.MustCompile(re).MatchString(errOut.String()) {
					t.Errorf("stderr lacks %s:\n%s", re, errOut)
				}
			}
			if strings.Contains(errOut.String(), "t-alice") {
				t.Errorf("the token reached stderr:\n%s", errOut)
			}
		})
	}
}

// recordHandler hands each log record to a channel: the test learns the
// listener's address from "agent host listening", as --addr-file would.
type recordHandler struct{ records chan slog.Record }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.records <- r.Clone()
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// TestServeListensAndShutsDown runs serve with its defaults on a free port:
// the embedded issuer and the HTTP face answer on the listener, and ending
// the context (SIGINT/SIGTERM) shuts it down gracefully, without error.
func TestServeListensAndShutsDown(t *testing.T) {
	records := make(chan slog.Record, 100)
	opts := &ServeOptions{IO: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, Options: server.Options{Logger: slog.New(recordHandler{records}),
		HTTPClient: &http.Client{Timeout: 10 * time.Second}, Now: time.Now, Listen: "127.0.0.1:0", AuthScope: "connection", DevUser: "alice",
		TokenTTL: time.Hour, RefreshTTL: time.Hour, CodeTTL: time.Minute, DeviceInterval: time.Second}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, opts) }()
	var addr string
	for addr == "" {
		select {
		case r := <-records:
			r.Attrs(func(a slog.Attr) bool {
				if r.Message == "agent host listening" && a.Key == "addr" {
					addr = a.Value.String()
				}
				return true
			})
		case err := <-done:
			t.Fatalf("serve ended before listening: %v", err)
		}
	}
	origin := "http://" + addr

	var md struct {
		Issuer                        string   `json:"issuer"`
		CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	}
	resp, err := http.Get(origin + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if md.Issuer != origin || !cmp.Equal(md.CodeChallengeMethodsSupported, []string{"S256"}) {
		t.Errorf("authorization server metadata: %+v", md)
	}
	resp, err = http.Post(origin+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `Bearer resource_metadata="` + origin + `/.well-known/oauth-protected-resource/mcp", scope="agent:use"`
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("POST /mcp without a token: %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v, want a clean exit", err)
	}
}
