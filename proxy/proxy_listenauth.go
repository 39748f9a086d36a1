package proxy

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"runtime"
	"strings"

	"github.com/agentauth/agentauth/internal/atomicfile"
)

// proxy --listen authenticates its local caller. Its loopback port is
// open to every process on the machine, of every user, and what answers
// there calls TARGET with the owner's credential: without a check any
// local user (another account, a daemon's uid, a sandboxed process) would
// call TARGET as the owner. So the endpoint's URL carries a secret, as
// Jupyter's token URL does:
//
//	http://127.0.0.1:PORT/SECRET/mcp
//
// SECRET is 256 bits from crypto/rand made at start (base64url, 43
// characters); it is shown only where the owner asked for it (stderr, or
// the --url-file, written with mode 0600) and never logged. A request
// whose path does not start with /SECRET/ is refused with 403 before its
// body is read, and nothing is forwarded; the segment is compared in
// constant time (crypto/subtle). The secret travels in the path, not in a
// header, because every MCP client takes a URL and not all of them let a
// user add headers, and because an MCP client may send an Authorization
// header of its own. The refusal is 403, not 401: a 401 would send an
// MCP client into OAuth discovery (MCP 2025-11-25 "Authorization"), which
// this endpoint does not offer. Host and Origin are still checked around
// it (host.NewGuard: DNS rebinding, pages of other origins).

// secretBytes is the secret's length: 256 bits.
const secretBytes = 32

// newSecret is a fresh secret for the endpoint's path.
func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cannot make the endpoint's secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// loadOrMakeSecret is the endpoint's secret: a fresh one when path is
// empty; else the one kept in the file at path (--secret-file), made and
// written there (mode 0600) when the file does not exist yet, so that a
// fixed --listen address and this file keep the endpoint's URL the same
// across starts. A file others may read (any group or other permission
// bit, on systems with Unix permissions) or one that does not hold a
// secret of this form is refused, naming the fix: the secret lends the
// owner's login to whoever reads it.
func loadOrMakeSecret(path string) (string, error) {
	if path == "" {
		return newSecret()
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		secret, err := newSecret()
		if err != nil {
			return "", err
		}
		if err := atomicfile.Write(path, []byte(secret+"\n")); err != nil { // mode 0600 (os.CreateTemp)
			return "", err
		}
		return secret, nil
	}
	if err != nil {
		return "", fmt.Errorf("cannot read the secret file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("the secret file %s is not a regular file", path)
	}
	if perm := info.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return "", fmt.Errorf("the secret file %s may be read by other users (mode %04o), and its secret lends your login: run chmod 600 %s, or delete it to make a new secret", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the secret file: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if raw, err := base64.RawURLEncoding.DecodeString(secret); err != nil || len(raw) != secretBytes {
		return "", fmt.Errorf("the secret file %s does not hold an endpoint secret (%d base64url characters): delete it and a new secret is made", path, base64.RawURLEncoding.EncodedLen(secretBytes))
	}
	return secret, nil
}

// Path is the endpoint's path with its secret, /SECRET/mcp: a secret
// itself, to be shown only to the owner.
func (s *Server) Path() string { return "/" + s.secret + EndpointPath }

// URL is the endpoint's URL for a listener at addr (HOST:PORT), with its
// secret.
func (s *Server) URL(addr string) string { return "http://" + addr + s.Path() }

// authenticate reports whether path starts with /SECRET/ and, if so, the
// rest of the path (from its slash).
func (s *Server) authenticate(path string) (rest string, ok bool) {
	seg, rest, found := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !strings.HasPrefix(path, "/") || !found {
		return "", false
	}
	return "/" + rest, subtle.ConstantTimeCompare([]byte(seg), []byte(s.secret)) == 1
}

// refuseCaller answers a request without the secret. The text names
// neither the secret nor the target.
func refuseCaller(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "forbidden: this endpoint's URL carries a secret; use the URL agentauth proxy --listen printed on stderr or wrote to its --url-file", http.StatusForbidden)
}
