package wire_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/internal/syncbuf"
	"github.com/agentauth/agentauth/wire"
)

func TestSplitCommandLine(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"agentauth serve --stdio", []string{"agentauth", "serve", "--stdio"}},
		{"  a\t b  ", []string{"a", "b"}},
		{`a 'b c' "d e"`, []string{"a", "b c", "d e"}},
		{`a 'it''s'`, []string{"a", "its"}},
		{`a "say \"hi\" \\ \x"`, []string{"a", `say "hi" \ \x`}},
		{`a b\ c \'q`, []string{"a", "b c", "'q"}},
		{`--config='my dir/cfg.json'`, []string{"--config=my dir/cfg.json"}},
		{`a '' ""`, []string{"a", "", ""}},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := wire.SplitCommandLine(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.in, diff)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`, `a b\`} {
		if _, err := wire.SplitCommandLine(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestDialHelperProcess is not a test: it is the child process of the
// stdio dial tests, selected by DIAL_HELPER. "echo" answers every request
// with its method and params; "linger" ignores stdin's end; "fail" exits 3
// when stdin ends.
func TestDialHelperProcess(t *testing.T) {
	mode := os.Getenv("DIAL_HELPER")
	if mode == "" {
		return
	}
	fmt.Fprintln(os.Stderr, "helper started in mode", mode)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		m, derr := wire.Decode(sc.Bytes())
		if derr != nil || !m.IsRequest() {
			continue
		}
		resp, _ := wire.NewResult(m.ID, map[string]any{"method": m.Method, "params": m.Params})
		b, _ := wire.Encode(resp)
		fmt.Println(string(b))
	}
	switch mode {
	case "linger":
		select {}
	case "fail":
		os.Exit(3)
	}
	os.Exit(0)
}

func dialHelper(t *testing.T, mode string, stderr io.Writer) wire.Conn {
	t.Helper()
	t.Setenv("DIAL_HELPER", mode)
	target := "stdio:'" + os.Args[0] + "' -test.run=^TestDialHelperProcess$"
	conn, err := wire.DialTarget(context.Background(), target, wire.DialOptions{Stderr: stderr})
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

func TestDialTargetStdio(t *testing.T) {
	var stderr syncbuf.Buffer
	conn := dialHelper(t, "echo", &stderr)
	c := wire.NewClient(conn)
	var got struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := c.Call(context.Background(), "echo", map[string]int{"n": 1}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Method != "echo" || string(got.Params) != `{"n":1}` {
		t.Errorf("round trip = %+v", got)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Close waited for the child, so its stderr has been passed through.
	if !strings.Contains(stderr.String(), "helper started in mode echo") {
		t.Errorf("child stderr not passed through: %q", stderr.String())
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Error("the connection did not end after Close")
	}
}

func TestDialTargetStdioChildFailureAndKill(t *testing.T) {
	conn := dialHelper(t, "fail", io.Discard)
	if err := conn.Close(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Close = %v, want the child's exit status", err)
	}
	// A child that ignores the end of its stdin is killed.
	conn = dialHelper(t, "linger", io.Discard)
	done := make(chan error, 1)
	go func() { done <- conn.Close() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not kill a lingering child")
	}
}

func TestDialTargetRefusals(t *testing.T) {
	ctx := context.Background()
	for target, want := range map[string]string{
		"http://127.0.0.1:1/mcp": "unsupported target",
		"127.0.0.1:7777":         "unsupported target",
		"stdio:":                 "no command after stdio:",
		"stdio:'unterminated":    "unterminated",
		"stdio:/nonexistent/agentauth-test-binary --stdio": "cannot run /nonexistent/agentauth-test-binary",
	} {
		if _, err := wire.DialTarget(ctx, target, wire.DialOptions{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", target, err, want)
		}
	}
}

func TestDialTargetWebSocketHidesConnectionToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer srv.Close()
	target := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws?tkn=very-secret-gate&x=1"
	_, err := wire.DialTarget(context.Background(), target, wire.DialOptions{HTTPClient: srv.Client()})
	if err == nil || !strings.Contains(err.Error(), "HTTP 403") || !strings.Contains(err.Error(), "tkn=***&x=1") {
		t.Errorf("err = %v, want HTTP 403 with the token hidden", err)
	}
	if err != nil && strings.Contains(err.Error(), "very-secret-gate") {
		t.Errorf("the error shows the connection token: %v", err)
	}
}

// recordingServer answers initialize and authenticate over in-memory pipes
// and records the params it received.
func recordingServer(t *testing.T) (*wire.Client, <-chan string) {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	server := wire.NewStdioConn(c2sR, s2cW, nil, 0)
	params := make(chan string, 10)
	go func() {
		for {
			b, err := server.Read(context.Background())
			if err != nil {
				return
			}
			m, _ := wire.Decode(b)
			params <- m.Method + " " + string(m.Params)
			var result any = map[string]bool{"authenticated": true}
			if m.Method == wire.MethodInitialize {
				result = map[string]any{"protocolVersion": 1, "serverSeq": 0, "snapshots": []any{}}
			}
			resp, _ := wire.NewResult(m.ID, result)
			out, _ := wire.Encode(resp)
			server.Write(context.Background(), out)
		}
	}()
	client := wire.NewClient(wire.NewStdioConn(s2cR, c2sW, c2sW, 0))
	t.Cleanup(func() { client.Close(); s2cW.Close() })
	return client, params
}

func TestInitializeAndAuthenticateDialects(t *testing.T) {
	ctx := context.Background()
	req := wire.Requirement{SchemeID: "dev", Resource: "http://127.0.0.1:7777/mcp"}
	tests := []struct {
		dialect            wire.Dialect
		wantInit, wantAuth string
	}{
		{wire.DialectDesign,
			`initialize {"protocolVersion":1,"clientId":"cli-1","clientCapabilities":{"auth":{"terminal":true},"_meta":{"terminal-auth":true}},"clientInfo":{"name":"agentauth","version":"0.0.0-dev"}}`,
			`authenticate {"schemeId":"dev","scheme":"bearer","token":"tok"}`},
		{wire.DialectPublished,
			`initialize {"channel":"ahp-root://","protocolVersions":["1.1.0","1.0.0","0.9.0"],"clientId":"cli-1-<uuid>","initialSubscriptions":["ahp-root://"]}`,
			`authenticate {"channel":"ahp-root://","resource":"http://127.0.0.1:7777/mcp","token":"tok"}`},
	}
	for _, tt := range tests {
		c, params := recordingServer(t)
		if _, err := wire.Initialize(ctx, c, tt.dialect, "cli-1"); err != nil {
			t.Fatal(err)
		}
		uuid := regexp.MustCompile(`cli-1-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)
		if got := uuid.ReplaceAllString(<-params, "cli-1-<uuid>"); got != tt.wantInit {
			t.Errorf("%s initialize sent %s, want %s", tt.dialect, got, tt.wantInit)
		}
		if err := wire.Authenticate(ctx, c, tt.dialect, req, "tok"); err != nil {
			t.Fatal(err)
		}
		if got := <-params; got != tt.wantAuth {
			t.Errorf("%s authenticate sent %s, want %s", tt.dialect, got, tt.wantAuth)
		}
	}
}
