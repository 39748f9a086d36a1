package upstream

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// The broker_*.txtar scripts' helpers: brokerbrowser, the user's browser
// following a sign-in link, and legacyupstream, an OAuth 2.0 server and
// API shaped like seed 004's Rally.
func init() {
	programs["brokerbrowser"] = brokerBrowserMain
	programs["legacyupstream"] = legacyUpstreamMain
	programs["brokerrpc"] = brokerRPCMain
}

// brokerRPCMain is an agent host client on one connection, WebSocket
// (ws://…) or stdio (stdio:COMMAND, run by sh -c): it sends the
// JSON-RPC requests INIT, AUTH and CALL (ids 1, 2, 3) and prints every
// message it reads ("< JSON"). When CALL is refused with a sign-in URL
// it writes that answer to -ask FILE, then waits: -wait push for a
// notification naming the upstream (AHP), or -wait METHODID for ACP's
// authenticate {methodId} to answer; then it sends CALL again (id 5).
// With -meanwhile REQ (repeatable, ACP), each REQ is sent and answered
// after that authenticate and before the answer is written to FILE, so
// while the authenticate waits for the sign-in.
// Usage: brokerrpc -ask FILE -wait push|METHODID [-meanwhile REQ]... TARGET INIT AUTH CALL
func brokerRPCMain() {
	fs := flag.NewFlagSet("brokerrpc", flag.ExitOnError)
	askFile := fs.String("ask", "", "write the sign-in answer to `FILE`")
	wait := fs.String("wait", "push", "push, or the ACP auth `METHODID` to authenticate with")
	var meanwhile []string
	fs.Func("meanwhile", "send `REQ` while ACP's authenticate waits", func(s string) error { meanwhile = append(meanwhile, s); return nil })
	fs.Parse(os.Args[1:])
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "brokerrpc: "+format+"\n", args...)
		os.Exit(1)
	}
	if fs.NArg() != 4 {
		fail("usage: brokerrpc -ask FILE -wait push|METHODID TARGET INIT AUTH CALL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var send func(string) error
	var read func() ([]byte, error)
	if cmdline, ok := strings.CutPrefix(fs.Arg(0), "stdio:"); ok {
		cmd := exec.CommandContext(ctx, "sh", "-c", cmdline)
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			fail("%v", err)
		}
		defer func() { in.Close(); cmd.Wait() }()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		send = func(m string) error { _, err := io.WriteString(in, m+"\n"); return err }
		read = func() ([]byte, error) {
			if !sc.Scan() {
				return nil, fmt.Errorf("stdout closed: %v", sc.Err())
			}
			return sc.Bytes(), nil
		}
	} else {
		c, _, err := websocket.Dial(ctx, fs.Arg(0), nil)
		if err != nil {
			fail("%v", err)
		}
		defer c.CloseNow()
		send = func(m string) error { return c.Write(ctx, websocket.MessageText, []byte(m)) }
		read = func() ([]byte, error) { _, b, err := c.Read(ctx); return b, err }
	}
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Error  *struct {
			Data struct {
				URL string `json:"url"`
			} `json:"data"`
		} `json:"error"`
		Raw []byte `json:"-"`
	}
	// until reads messages, printing each, up to the answer to id (or,
	// for id "", a notification that names an upstream).
	until := func(id string) msg {
		for {
			b, err := read()
			if err != nil {
				fail("%v", err)
			}
			fmt.Printf("< %s\n", b)
			var m msg
			json.Unmarshal(b, &m)
			m.Raw = b
			if id == "" && m.Method != "" && strings.Contains(string(b), `"upstream"`) || id != "" && string(m.ID) == id {
				return m
			}
		}
	}
	call := func(id, req string) msg {
		if err := send(req); err != nil {
			fail("%v", err)
		}
		return until(id)
	}
	call("1", fs.Arg(1))
	call("2", fs.Arg(2))
	m := call("3", fs.Arg(3))
	if m.Error == nil || m.Error.Data.URL == "" {
		return
	}
	if *wait == "push" {
		os.WriteFile(*askFile, append(m.Raw, '\n'), 0o600)
		until("")
	} else if len(meanwhile) == 0 {
		os.WriteFile(*askFile, append(m.Raw, '\n'), 0o600)
		call("4", `{"jsonrpc":"2.0","id":4,"method":"authenticate","params":{"methodId":`+strconv.Quote(*wait)+`}}`)
	} else {
		if err := send(`{"jsonrpc":"2.0","id":4,"method":"authenticate","params":{"methodId":` + strconv.Quote(*wait) + `}}`); err != nil {
			fail("%v", err)
		}
		for _, req := range meanwhile {
			var r struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal([]byte(req), &r)
			call(string(r.ID), req)
		}
		os.WriteFile(*askFile, append(m.Raw, '\n'), 0o600)
		until("4")
	}
	call("5", strings.Replace(fs.Arg(3), `"id":3`, `"id":5`, 1))
}

// signInURLRE finds a sign-in link (or a saved callback URL) in a file.
var signInURLRE = regexp.MustCompile(`http://[0-9.:]+/(auth/start|callback)\?[^"\s\\]+`)

// brokerBrowserMain opens the first sign-in link found in FILE (the saved
// answer that carried it) as a user's browser would: it follows redirects
// with a cookie jar kept in -jar FILE across runs, and prints each hop's
// status and the final page's title and text. With -stop-at-callback OUT
// it stops before the redirect to /callback and writes that URL to OUT;
// with -save PAGE it writes the final page to PAGE.
// Usage: brokerbrowser [-jar FILE] [-stop-at-callback OUT] [-save PAGE] FILE
func brokerBrowserMain() {
	fs := flag.NewFlagSet("brokerbrowser", flag.ExitOnError)
	jarFile := fs.String("jar", "", "keep the cookies in `FILE`")
	stop := fs.String("stop-at-callback", "", "write the /callback URL to `FILE` instead of following it")
	save := fs.String("save", "", "write the final page to `FILE`")
	fs.Parse(os.Args[1:])
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "brokerbrowser: "+format+"\n", args...)
		os.Exit(1)
	}
	if fs.NArg() != 1 {
		fail("usage: brokerbrowser [-jar FILE] [-stop-at-callback OUT] FILE")
	}
	src, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fail("%v", err)
	}
	m := signInURLRE.Find(src)
	if m == nil {
		fail("no sign-in link in %s", fs.Arg(0))
	}
	start := strings.ReplaceAll(string(m), `\u0026`, "&")
	jar, _ := cookiejar.New(nil)
	type saved struct{ URL, Name, Value string }
	if *jarFile != "" {
		if b, err := os.ReadFile(*jarFile); err == nil {
			var cs []saved
			json.Unmarshal(b, &cs)
			for _, c := range cs {
				u, _ := url.Parse(c.URL)
				jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value, Path: "/"}})
			}
		}
	}
	var seen []saved
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	next := start
	for hop := 0; hop < 10; hop++ {
		u, err := url.Parse(next)
		if err != nil {
			fail("%v", err)
		}
		if *stop != "" && u.Path == "/callback" {
			os.WriteFile(*stop, []byte(next+"\n"), 0o600)
			fmt.Println("stopped before the callback")
			break
		}
		resp, err := hc.Get(next)
		if err != nil {
			fail("%v", err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		fmt.Printf("%s %s -> %d\n", u.Host, u.Path, resp.StatusCode)
		for _, c := range resp.Cookies() {
			seen = append(seen, saved{URL: u.Scheme + "://" + u.Host + "/callback", Name: c.Name, Value: c.Value})
			fmt.Printf("cookie: %s HttpOnly=%v SameSite=%v Path=%s\n", strings.SplitN(c.Name, "_", 3)[1], c.HttpOnly, c.SameSite == http.SameSiteLaxMode, c.Path)
		}
		if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && loc != "" {
			l, err := u.Parse(loc)
			if err != nil {
				fail("%v", err)
			}
			next = l.String()
			continue
		}
		if *save != "" {
			os.WriteFile(*save, body, 0o600)
		}
		if t := regexp.MustCompile(`<h1>(.*?)</h1>`).FindSubmatch(body); t != nil {
			fmt.Printf("page: %s\n", html.UnescapeString(string(t[1])))
		}
		if t := regexp.MustCompile(`<p[^>]*>(.*?)</p>`).FindSubmatch(body); t != nil {
			fmt.Printf("text: %s\n", html.UnescapeString(string(t[1])))
		}
		break
	}
	if *jarFile != "" && len(seen) > 0 {
		b, _ := json.Marshal(seen)
		os.WriteFile(*jarFile, b, 0o600)
	}
}

// legacyUpstreamMain is an OAuth 2.0 authorization server and API like
// seed 004's Rally: no metadata documents, a confidential client
// (client_secret_basic or client_secret_post), no PKCE, and an API.
//
//	GET  /authorize  approves at once as carol; redirects with code and state
//	POST /token      authorization_code (single use, redirect_uri checked)
//	                 and refresh_token; tokens live -ttl
//	POST /revoke     RFC 7009
//	POST /api        {"user": "carol", "workspace": "Rally"} for a live token, else 401
//	POST /forget-all drops every token, as an administrator revoking them
//
// It logs one line per event to stderr and writes its HOST:PORT to -addr-file.
// Usage: legacyupstream -addr-file FILE -secret S [-auth basic|post] [-ttl D] [-issued DIR]
func legacyUpstreamMain() {
	fs := flag.NewFlagSet("legacyupstream", flag.ExitOnError)
	addrFile := fs.String("addr-file", "", "write HOST:PORT to `FILE`")
	secret := fs.String("secret", "", "the client secret of client rally-mcp")
	auth := fs.String("auth", "basic", "client authentication: basic or post")
	ttl := fs.Duration("ttl", time.Hour, "access token lifetime")
	issued := fs.String("issued", "", "write the latest tokens issued to `DIR`/access.tok and refresh.tok")
	fs.Parse(os.Args[1:])
	const clientID = "rally-mcp"
	type code struct{ redirect string }
	var mu sync.Mutex
	codes := map[string]code{}
	access := map[string]time.Time{} // token → expiry
	refresh := map[string]bool{}
	n := 0
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "legacyupstream: "+format+"\n", args...) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != clientID || q.Get("response_type") != "code" || q.Get("redirect_uri") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		logf("authorize: scope=%q code_challenge=%v", q.Get("scope"), q.Has("code_challenge"))
		c := rand.Text()
		mu.Lock()
		codes[c] = code{redirect: q.Get("redirect_uri")}
		mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {c}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	clientOK := func(r *http.Request) bool {
		if *auth == "basic" {
			id, s, ok := r.BasicAuth()
			return ok && id == clientID && s == *secret
		}
		return r.PostForm.Get("client_id") == clientID && r.PostForm.Get("client_secret") == *secret
	}
	issue := func(w http.ResponseWriter) {
		n++
		at, rt := rand.Text(), rand.Text()
		access[at] = time.Now().Add(*ttl)
		refresh[rt] = true
		if *issued != "" {
			os.WriteFile(*issued+"/access.tok", []byte(at+"\n"), 0o600)
			os.WriteFile(*issued+"/refresh.tok", []byte(rt+"\n"), 0o600)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "bearer", "expires_in": int(ttl.Seconds()), "refresh_token": rt})
	}
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		if !clientOK(r) {
			logf("token: client authentication failed")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		bad := func(why string) {
			logf("token: refused: %s", why)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
		}
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			c, ok := codes[r.PostForm.Get("code")]
			delete(codes, r.PostForm.Get("code"))
			if !ok || c.redirect != r.PostForm.Get("redirect_uri") {
				bad("unknown code or redirect_uri")
				return
			}
			logf("token: code exchanged (client auth %s, code_verifier sent: %v)", *auth, r.PostForm.Has("code_verifier"))
		case "refresh_token":
			if !refresh[r.PostForm.Get("refresh_token")] {
				bad("unknown refresh token")
				return
			}
			delete(refresh, r.PostForm.Get("refresh_token"))
			logf("token: refreshed")
		default:
			bad("unsupported grant_type")
			return
		}
		issue(w)
	})
	mux.HandleFunc("POST /revoke", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		if !clientOK(r) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		delete(refresh, r.PostForm.Get("token"))
		delete(access, r.PostForm.Get("token"))
		logf("revoke: %s", r.PostForm.Get("token_type_hint"))
	})
	mux.HandleFunc("POST /forget-all", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		clear(access)
		clear(refresh)
		mu.Unlock()
		logf("forgot every token")
	})
	mux.HandleFunc("POST /api", func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		exp, ok := access[tok]
		mu.Unlock()
		if !ok || time.Now().After(exp) {
			logf("api: refused a token")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		logf("api: called as carol")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"user": "carol", "workspace": "Rally"})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	os.WriteFile(*addrFile, []byte(ln.Addr().String()+"\n"), 0o600)
	go http.Serve(ln, mux)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
