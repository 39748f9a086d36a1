package main

// The reference the benchmarks measure serve against (-reference): a
// minimal MCP and WebSocket server that verifies JWTs and caches the
// claims, with nothing else to do.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// refServer is the reference: verified claims cached by the token's SHA-256.
type refServer struct {
	issuer   string
	resource string
	keys     jose.JSONWebKeySet

	mu    sync.RWMutex
	cache map[[32]byte]*refClaims
}

type refClaims struct {
	jwt.Claims
	Scope string `json:"scope"`
}

func runReference(addrFile, issuer string) error {
	var md struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := getJSON(issuer+"/.well-known/oauth-authorization-server", &md); err != nil {
		return err
	}
	s := &refServer{issuer: issuer, resource: issuer + "/mcp", cache: map[[32]byte]*refClaims{}}
	if err := getJSON(md.JWKSURI, &s.keys); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", s.serveMCP)
	mux.HandleFunc("GET /ws", s.serveWS)
	// SIGINT ends it (proc.stop) also when it was started with SIGINT
	// ignored, as a shell starts a command in the background: Go keeps
	// an inherited ignore unless the signal is asked for.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	errc := make(chan error, 1)
	go func() { errc <- http.Serve(ln, mux) }()
	select {
	case <-sig:
		return nil
	case err := <-errc:
		return err
	}
}

func getJSON(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// verify returns the token's claims, from the cache or verified (ES256).
func (s *refServer) verify(header string) (*refClaims, bool) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return nil, false
	}
	k := sha256.Sum256([]byte(token))
	s.mu.RLock()
	c := s.cache[k]
	s.mu.RUnlock()
	if c == nil {
		tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil || len(tok.Headers) != 1 {
			return nil, false
		}
		keys := s.keys.Key(tok.Headers[0].KeyID)
		if len(keys) == 0 {
			return nil, false
		}
		c = &refClaims{}
		if tok.Claims(keys[0].Key, c) != nil {
			return nil, false
		}
		if c.Validate(jwt.Expected{Issuer: s.issuer, AnyAudience: jwt.Audience{s.resource}}) != nil {
			return nil, false
		}
		s.mu.Lock()
		s.cache[k] = c
		s.mu.Unlock()
	}
	if c.Expiry == nil || !time.Now().Before(c.Expiry.Time()) {
		return nil, false
	}
	return c, true
}

type refRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

func (s *refServer) serveMCP(w http.ResponseWriter, r *http.Request) {
	c, ok := s.verify(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "invalid token", http.StatusUnauthorized)
		return
	}
	var m refRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil || m.JSONRPC != "2.0" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
		"schemes": []any{map[string]any{"schemeId": "dev", "subject": c.Subject, "scopes": strings.Fields(c.Scope), "expiresAt": c.Expiry.Time()}}}})
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (s *refServer) serveWS(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if _, ok := s.verify(auth); !ok {
		http.Error(w, "invalid token", http.StatusUnauthorized)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := context.Background()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var m refRequest
		if json.Unmarshal(data, &m) != nil {
			return
		}
		var out []byte
		if _, ok := s.verify(auth); ok { // the call is authenticated: its grant still holds
			out, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": m.Params})
		} else {
			out, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32007, "message": "Authentication required"}})
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = c.Write(wctx, websocket.MessageText, out)
		cancel()
		if err != nil {
			return
		}
	}
}
