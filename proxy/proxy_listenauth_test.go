package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/store"
)

// ownerToken is the credential's token the listening proxy holds.
const ownerToken = "owner-access-token-s3cret"

// bearerMCP is a Streamable HTTP server that answers initialize only with
// the owner's token and records the Authorization of every request.
type bearerMCP struct {
	mu   sync.Mutex
	seen []string
}

func (f *bearerMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.Header.Get("Authorization"))
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+ownerToken {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&m)
	if m.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"owned","version":"1"}}}`, m.ID)
}

func (f *bearerMCP) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// listenOwned serves a Server for a target that needs the owner's token,
// stored, on a loopback listener. It returns the server, its address and
// the target's record.
func listenOwned(t *testing.T) (*Server, string, *bearerMCP) {
	t.Helper()
	f := &bearerMCP{}
	up := httptest.NewServer(f)
	t.Cleanup(up.Close)
	target := up.URL + "/mcp"
	cl := newTestClient(t)
	st, _ := cl.Store()
	ctx, cancel := context.WithCancel(context.Background())
	if err := st.Put(ctx, &store.Credential{Key: store.Key{Resource: target, Issuer: up.URL}, Target: target,
		AccessToken: ownerToken, TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ps, err := NewServer(ctx, cl, Request{Target: target}, "")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: ps}
	go hs.Serve(ln)
	t.Cleanup(func() {
		cancel()
		hs.Close()
		ps.Wait()
	})
	return ps, ln.Addr().String(), f
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`

// postInitialize posts an initialize to url and returns the status and
// the body.
func postInitialize(t *testing.T, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A caller without the endpoint's secret (the URL before it had one, a
// wrong, a shortened or a misplaced secret, the secret as a bearer token)
// is refused with 403: the target is never called, and neither the
// owner's token nor the secret is in the answer. The owner's URL works,
// with the owner's token at the target.
func TestListenRefusesCallerWithoutSecret(t *testing.T) {
	ps, addr, f := listenOwned(t)
	secret := strings.Split(ps.Path(), "/")[1]
	if len(secret) != 43 || ps.Path() != "/"+secret+"/mcp" {
		t.Fatalf("Path() = %q, want /SECRET/mcp with 256 bits of base64url", ps.Path())
	}
	other := []byte(secret)
	other[0] ^= 1
	for _, path := range []string{"/mcp", "/" + string(other) + "/mcp", "/" + secret[:42] + "/mcp", "/mcp/" + secret, "//" + secret + "/mcp", "/" + secret} {
		status, body := postInitialize(t, "http://"+addr+path)
		if status != http.StatusForbidden {
			t.Errorf("POST %s: status %d, want 403 (%s)", strings.ReplaceAll(path, secret, "SECRET"), status, body)
		}
		if strings.Contains(body, ownerToken) || strings.Contains(body, secret) {
			t.Errorf("POST %s: the answer reveals the token or the secret: %s", path, body)
		}
	}
	// The secret as a bearer token on the old URL is refused too.
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the secret as a bearer token: status %d, want 403", resp.StatusCode)
	}
	if seen := f.got(); len(seen) != 0 {
		t.Fatalf("the target was called for a caller without the secret: %q", seen)
	}
	status, body := postInitialize(t, ps.URL(addr))
	if status != http.StatusOK || !strings.Contains(body, `"name":"owned"`) || strings.Contains(body, ownerToken) {
		t.Fatalf("the owner's URL: status %d, body %s", status, body)
	}
	if seen := f.got(); len(seen) == 0 || seen[0] != "POST Bearer "+ownerToken {
		t.Errorf("the target saw %q, want the owner's token", seen)
	}
}

// TestSecretFile: --secret-file keeps the endpoint's secret across starts
// (the second start reads what the first made, mode 0600), and refuses a
// file other users may read or one without a secret, naming the fix.
func TestSecretFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	first, err := loadOrMakeSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode %04o, want 0600", info.Mode().Perm())
	}
	again, err := loadOrMakeSecret(path)
	if err != nil || again != first {
		t.Fatalf("second start: %q, %v; want the first start's secret", again, err)
	}
	if fresh, _ := loadOrMakeSecret(""); fresh == first || len(fresh) != 43 {
		t.Errorf("without a file: %q, want a fresh 43-character secret", fresh)
	}

	if runtime.GOOS != "windows" {
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = loadOrMakeSecret(path)
		if err == nil || !strings.Contains(err.Error(), "run chmod 600 "+path) || strings.Contains(err.Error(), first) {
			t.Errorf("a file others may read: %v; want a refusal naming chmod 600, without the secret", err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if again, err := loadOrMakeSecret(path); err != nil || again != first {
			t.Errorf("after chmod 600: %q, %v; want the kept secret", again, err)
		}
	}

	if err := os.WriteFile(path, []byte("not a secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrMakeSecret(path); err == nil || !strings.Contains(err.Error(), "delete it and a new secret is made") {
		t.Errorf("a file without a secret: %v; want a refusal naming the fix", err)
	}
}
