package devserve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coder/websocket"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentauth/agentauth/wire"
)

// Helpers of the host_sec_* and serve_sec_* scripts (serve against hostile
// peers): the hostsec program and the mintjwt command.
func init() {
	programs["hostsec"] = hostsecMain
	cmds["mintjwt"] = mintJWT
}

const hostsecUsage = `usage: hostsec COMMAND [flags] ARGS
  http [flags] URL            one HTTP request with a chosen Host and Origin; prints status, CORS header, body
  issuer -dir DIR             a JWT authorization server on loopback: writes DIR/issuer.json (its key, for
                              mintjwt), DIR/cfg.json (a serve config trusting it), then DIR/issuer.addr
  repeat [flags] WSURL METHOD authenticate, then call METHOD -n times on one connection
  slowreader [flags] WSURL    one connection authenticates and stops reading while another floods pushes to it`

func hostsecMain() {
	cmds := map[string]func([]string) error{"http": hostsecHTTP, "issuer": hostsecIssuer, "repeat": hostsecRepeat, "slowreader": hostsecSlowReader}
	if len(os.Args) < 2 || cmds[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, hostsecUsage)
		os.Exit(2)
	}
	if err := cmds[os.Args[1]](os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "hostsec:", err)
		os.Exit(1)
	}
}

// hostsecHTTP sends one request as a web page or a rebinding attacker
// would: any Host, any Origin, a WebSocket upgrade. Redirects are not
// followed and their Location (which may carry a code) is not printed.
func hostsecHTTP(args []string) error {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	method := fs.String("method", http.MethodGet, "HTTP method")
	host := fs.String("host", "", "send this `Host` header instead of the URL's")
	origin := fs.String("origin", "", "send this `Origin` header")
	tokenFile := fs.String("token", "", "send the token in `FILE` as Authorization: Bearer")
	form := fs.String("form", "", "send this urlencoded `BODY`")
	jsonBody := fs.String("json", "", "send this JSON `BODY`")
	ws := fs.Bool("ws", false, "ask for a WebSocket upgrade")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("http wants one URL")
	}
	var body io.Reader
	switch {
	case *form != "":
		body = strings.NewReader(*form)
	case *jsonBody != "":
		body = strings.NewReader(*jsonBody)
	}
	req, err := http.NewRequest(*method, fs.Arg(0), body)
	if err != nil {
		return err
	}
	if *host != "" {
		req.Host = *host
	}
	if *origin != "" {
		req.Header.Set("Origin", *origin)
	}
	switch {
	case *form != "":
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	case *jsonBody != "":
		req.Header.Set("Content-Type", "application/json")
	}
	if *tokenFile != "" {
		tok, err := readSecret(*tokenFile)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if *ws {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	}
	hc := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	fmt.Printf("status: %d\n", resp.StatusCode)
	for _, v := range resp.Header.Values("Access-Control-Allow-Origin") {
		fmt.Printf("Access-Control-Allow-Origin: %s\n", v)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	fmt.Printf("body:\n%s\n", strings.TrimSpace(string(b)))
	return nil
}

// issuerFile is what hostsec issuer writes for mintjwt.
type issuerFile struct {
	Issuer string          `json:"issuer"`
	Key    jose.JSONWebKey `json:"key"`
}

// hostsecIssuer serves RFC 8414 metadata and a JWKS on loopback until
// killed; the tokens are minted by mintjwt with the key it writes.
func hostsecIssuer(args []string) error {
	fs := flag.NewFlagSet("issuer", flag.ContinueOnError)
	dir := fs.String("dir", ".", "write issuer.json, cfg.json and issuer.addr to `DIR`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	jwk := jose.JSONWebKey{Key: key, KeyID: "hostsec", Algorithm: string(jose.ES256), Use: "sig"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	iss := "http://" + ln.Addr().String()
	write := func(name string, v any) error {
		b, _ := json.Marshal(v)
		return os.WriteFile(filepath.Join(*dir, name), append(b, '\n'), 0o600)
	}
	cfg := map[string]any{"schemes": []any{map[string]any{"id": "dev", "label": "hostsec issuer", "authorizationServers": []string{iss},
		"scopesSupported": []string{"agent:use"}, "validation": map[string]string{"type": "jwt"}}}}
	if err := write("issuer.json", issuerFile{Issuer: iss, Key: jwk}); err != nil {
		return err
	}
	if err := write("cfg.json", cfg); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": iss + "/jwks", "token_endpoint": iss + "/token",
			"response_types_supported": []string{"code"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}})
	})
	if err := os.WriteFile(filepath.Join(*dir, "issuer.addr"), []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
		return err
	}
	return http.Serve(ln, mux)
}

// mintJWT signs a token with hostsec issuer's key: valid claims for
// AUDIENCE (iss, sub alice, scope agent:use, one hour), JOSE header typ
// TYP ("" for none). With typ JWT it is an ID token in all but its aud.
// Usage: mintjwt -typ TYP ISSUERFILE AUDIENCE OUTFILE
func mintJWT(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 5 || args[0] != "-typ" {
		ts.Fatalf("usage: mintjwt -typ TYP ISSUERFILE AUDIENCE OUTFILE")
	}
	typ, file, aud, out := args[1], args[2], args[3], args[4]
	var f issuerFile
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(file)), &f))
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: f.Key}, opts)
	ts.Check(err)
	now := time.Now()
	tok, err := jwt.Signed(signer).Claims(map[string]any{"iss": f.Issuer, "aud": aud, "sub": "alice", "client_id": "hostsec",
		"scope": "agent:use", "jti": rand.Text(), "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).Serialize()
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(out), []byte(tok+"\n"), 0o600))
}

// dialInitialized opens a WebSocket connection, initializes it (design
// dialect) and authenticates token on the scheme dev.
func dialInitialized(ctx context.Context, target, token string) (*wire.Client, error) {
	conn, err := wire.DialWebSocket(ctx, target, http.DefaultClient, 0)
	if err != nil {
		return nil, err
	}
	c := wire.NewClient(conn)
	if _, err := wire.Initialize(ctx, c, wire.DialectDesign, "hostsec"); err != nil {
		c.Close()
		return nil, err
	}
	if err := wire.Authenticate(ctx, c, wire.DialectDesign, wire.Requirement{SchemeID: "dev"}, token); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// hostsecRepeat calls METHOD -n times after authenticating -token, and
// stops at the first error.
func hostsecRepeat(args []string) error {
	fs := flag.NewFlagSet("repeat", flag.ContinueOnError)
	n := fs.Int("n", 1, "call the method `N` times")
	token := fs.String("token", "", "authenticate with `TOKEN`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("repeat wants WSURL and METHOD")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := dialInitialized(ctx, fs.Arg(0), *token)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range *n {
		if err := c.Call(ctx, fs.Arg(1), nil, nil); err != nil {
			return fmt.Errorf("call %d: %w", i+1, err)
		}
	}
	fmt.Printf("%s answered %d times\n", fs.Arg(1), *n)
	return nil
}

// hostsecSlowReader proves that a connection that stops reading does not
// stall the others (serve --auth-scope host, where every authenticate is
// pushed to every other connection). The silent connection initializes,
// authenticates with -silent, and then never reads again. The busy one
// authenticates with -token and signs out, again and again, each call
// bounded by -deadline, until the server's log (-log) says the silent
// connection's send queue overflowed, and then -after more times. Any
// call over the deadline fails the command: a stalled authenticate. Then
// the silent connection reads what it was sent, up to the close frame.
func hostsecSlowReader(args []string) error {
	fs := flag.NewFlagSet("slowreader", flag.ContinueOnError)
	silentToken := fs.String("silent", "", "the silent connection's `TOKEN`")
	token := fs.String("token", "", "the busy connection's `TOKEN`")
	deadline := fs.Duration("deadline", 5*time.Second, "the most one authenticate may take")
	logFile := fs.String("log", "", "the server's log `FILE`")
	limit := fs.Int("max", 200000, "give up after `N` calls")
	after := fs.Int("after", 200, "calls after the overflow")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("slowreader wants WSURL")
	}
	target := fs.Arg(0)
	ctx := context.Background()

	silent, _, err := websocket.Dial(ctx, target, nil)
	if err != nil {
		return err
	}
	defer silent.CloseNow()
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"schemeId":"dev","token":` + strconvQuote(*silentToken) + `}}`,
	} {
		if err := silent.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
			return err
		}
		if _, answer, err := silent.Read(ctx); err != nil || !strings.Contains(string(answer), `"result"`) {
			return fmt.Errorf("silent connection: %s %v", answer, err)
		}
	}

	busy, err := dialInitialized(ctx, target, *token)
	if err != nil {
		return err
	}
	defer busy.Close()
	overflowAt := -1
	for i := 0; overflowAt < 0 || i < overflowAt+*after; i++ {
		if i == *limit {
			return fmt.Errorf("the silent connection was not closed after %d pushes", *limit)
		}
		tok := *token
		if i%2 == 1 {
			tok = "" // sign out: pushed as "required"
		}
		callCtx, cancel := context.WithTimeout(ctx, *deadline)
		err := wire.Authenticate(callCtx, busy, wire.DialectDesign, wire.Requirement{SchemeID: "dev"}, tok)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("authenticate %d took longer than %s: stalled behind the silent connection", i+1, *deadline)
		}
		if err != nil {
			return fmt.Errorf("authenticate %d: %w", i+1, err)
		}
		if overflowAt < 0 && i%100 == 99 {
			if b, _ := os.ReadFile(*logFile); strings.Contains(string(b), "send queue full") {
				overflowAt = i
				fmt.Fprintf(os.Stderr, "hostsec: the overflow was logged by call %d\n", i+1)
			}
		}
	}
	fmt.Printf("the silent connection's queue overflowed; every authenticate answered within %s, %d more after it\n", *deadline, *after)
	// The silent connection reads at last: what was written, then the
	// close frame.
	for {
		if _, _, err := silent.Read(ctx); err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				return fmt.Errorf("the silent connection ended without a close frame: %w", err)
			}
			fmt.Printf("the silent connection was closed: status %d, reason %q\n", ce.Code, ce.Reason)
			return nil
		}
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
