//go:build unix

package commands

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/syncbuf"
	"github.com/agentauth/agentauth/store"
)

// otherCallerEnv carries ADDR and URLFILE to the process of another user
// (TestProxyListenOtherCaller).
const otherCallerEnv = "AGENTAUTH_TEST_OTHER_CALLER"

// listenOwnerToken is the token of the owner's credential for the target.
const listenOwnerToken = "owner-at-s3cret"

// TestProxyListenOtherUser: proxy --listen writes its URL, with a secret,
// to --url-file with mode 0600 and answers only that URL. The owner's MCP
// client gets the target, called with the owner's token. A process of
// another user (uid 65534) can neither read the file nor call the target
// through the old URL or a guessed secret (403), and the target never
// sees a request for it.
func TestProxyListenOtherUser(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+listenOwnerToken || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m struct{ ID json.RawMessage }
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"owned","version":"1"}}}`, m.ID)
	}))
	defer target.Close()
	targetURL := target.URL + "/mcp"

	// A directory every user may enter: only the file's mode guards it.
	dir, err := os.MkdirTemp("", "proxy-listen-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	urlFile, addrFile := filepath.Join(dir, "url"), filepath.Join(dir, "addr")

	tf := newTestFactory(t, "")
	stderr := &syncbuf.Buffer{}
	tf.IO.ErrOut = stderr
	ctx, cancel := context.WithCancel(context.Background())
	if err := tf.st.Put(ctx, &store.Credential{Key: store.Key{Resource: targetURL, Issuer: target.URL}, Target: targetURL,
		AccessToken: listenOwnerToken, TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	opts := &ProxyOptions{IO: tf.IO, Client: tf.Client(), Target: targetURL, Transport: "http-first",
		Listen: "127.0.0.1:0", AddrFile: addrFile, URLFile: urlFile}
	done := make(chan error, 1)
	go func() { done <- runProxy(ctx, opts) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy --listen: %v", err)
		}
	}()
	waitFor(t, stderr, "Serving ", 1)

	addr := strings.TrimSpace(listenRead(t, addrFile))
	fi, err := os.Stat(urlFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("--url-file has mode %v, want 0600", fi.Mode().Perm())
	}
	url := listenRead(t, urlFile)
	if !regexp.MustCompile(`^http://` + regexp.QuoteMeta(addr) + `/[A-Za-z0-9_-]{43}/mcp\n$`).MatchString(url) {
		t.Fatalf("--url-file holds %q, want http://%s/SECRET/mcp", url, addr)
	}
	url = strings.TrimSpace(url)
	secret := strings.Split(url, "/")[3]
	if !strings.Contains(stderr.String(), "the URL, with its secret, is in "+urlFile) || strings.Contains(stderr.String(), secret) {
		t.Errorf("stderr names the file, never the secret:\n%s", stderr.String())
	}

	t.Run("another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to run a process as uid 65534")
		}
		out := runAsNobody(t, dir, addr+" "+urlFile)
		for _, want := range []string{"read: permission denied", "old url: 403", "guessed secret: 403"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("the other user's process: no %q in\n%s", want, out)
			}
		}
		if strings.Contains(out, listenOwnerToken) || strings.Contains(out, secret) {
			t.Errorf("the other user's process got the token or the secret:\n%s", out)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 0 {
			t.Errorf("the target was called for the other user: %q", seen)
		}
	})

	status, body := listenPost(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if status != http.StatusOK || !strings.Contains(body, `"name":"owned"`) {
		t.Fatalf("the owner's URL: status %d, body %s", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[0] != "POST Bearer "+listenOwnerToken {
		t.Errorf("the target saw %q, want the owner's token", seen)
	}
}

// runAsNobody runs TestProxyListenOtherCaller as uid and gid 65534 from a
// copy of this test binary in dir, and returns what it printed.
func runAsNobody(t *testing.T, dir, env string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "caller.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestProxyListenOtherCaller$")
	cmd.Dir = dir
	cmd.Env = []string{otherCallerEnv + "=" + env, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the other user's process: %v\n%s", err, out)
	}
	return string(out)
}

// TestProxyListenOtherCaller is the other user's process of
// TestProxyListenOtherUser (run only there): it tries to read the URL
// file, then calls the endpoint at its URL before it had a secret and
// with a guessed one, printing what it got.
func TestProxyListenOtherCaller(t *testing.T) {
	env := os.Getenv(otherCallerEnv)
	if env == "" {
		t.Skip("the other user's process of TestProxyListenOtherUser")
	}
	addr, urlFile, _ := strings.Cut(env, " ")
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	if b, err := os.ReadFile(urlFile); err == nil {
		fmt.Fprintf(w, "read: %s\n", b)
	} else if os.IsPermission(err) {
		fmt.Fprintln(w, "read: permission denied")
	} else {
		fmt.Fprintf(w, "read: %v\n", err)
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"other","version":"1"}}}`
	for _, c := range []struct{ name, path string }{{"old url", "/mcp"}, {"guessed secret", "/" + strings.Repeat("A", 43) + "/mcp"}} {
		status, body := listenPost(t, "http://"+addr+c.path, initialize)
		fmt.Fprintf(w, "%s: %d\n%s\n", c.name, status, body)
	}
}

// listenPost posts body to url as an MCP client does and returns the status
// and the answer.
func listenPost(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

func listenRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
