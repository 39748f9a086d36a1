package github

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
)

// The github_*.txtar and legacy_*.txtar scripts' helpers: fakegithub, an
// authorization server that behaves as GitHub documents its OAuth apps'
// flows, or as a legacy OAuth 2.0 server (expandenv, which writes a config
// file naming the fake's address, is package script's).
func init() {
	programs["fakegithub"] = fakeGitHubMain
}

// fakeGitHubUsage says what the fake does in each mode.
const fakeGitHubUsage = `usage: fakegithub -addr-file FILE -log FILE [-mode github|ghes|legacy] [flags]

github: github.com as its OAuth app documentation describes it.
  POST /login/device/code        device code; client_id and scope; no secret
  POST /login/oauth/access_token device polls (authorization_pending, slow_down
                                 and errors in 200 answers) and code exchange
                                 (client_secret required, PKCE S256 checked
                                 when a challenge was sent); every answer
                                 form-encoded unless Accept: application/json
  GET  /login/oauth/authorize    approves at once and redirects to the
                                 loopback redirect_uri (any port)
  GET  /user, /api/v3/user       {"login": …} for a token, else 401
  GET  /.well-known/oauth-authorization-server/login/oauth  metadata
ghes: a GitHub Enterprise Server: the same, with no metadata and no PKCE.
legacy: an OAuth 2.0 server like seed 004's: no metadata, GET /authorize,
  POST /token (errors with 400) with a client secret (Basic or form), no
  PKCE; POST /device (RFC 8628) and POST /revoke (RFC 7009) too.
Every mode: POST /introspect (RFC 7662, Basic rs:"rs s3cret"), the test
hosts' way to check the fake's tokens. The log has one line per OAuth
request: what was sent, never a secret's value.`

type fakeGitHub struct {
	mode, base, clientID, secret, user string
	pending, interval                  int
	slowDown, deny                     bool

	mu      sync.Mutex
	log     *os.File
	devices map[string]*fakeDevice // by device_code
	codes   map[string]fakeCode    // authorization codes
	tokens  map[string]fakeToken
}

type fakeDevice struct {
	scope      string
	polls      int
	slowedDown bool
}

type fakeCode struct {
	clientID, redirectURI, scope, challenge string
}

type fakeToken struct{ clientID, scope string }

func fakeGitHubMain() {
	fs := flag.NewFlagSet("fakegithub", flag.ExitOnError)
	fs.Usage = func() { fmt.Fprintln(os.Stderr, fakeGitHubUsage); fs.PrintDefaults() }
	g := &fakeGitHub{devices: map[string]*fakeDevice{}, codes: map[string]fakeCode{}, tokens: map[string]fakeToken{}}
	addrFile := fs.String("addr-file", "", "write the listening address to `FILE`")
	logFile := fs.String("log", "", "log each request to `FILE`")
	fs.StringVar(&g.mode, "mode", "github", "github, ghes or legacy")
	fs.StringVar(&g.clientID, "client-id", "Iv1.fakeapp", "the OAuth app's client id")
	fs.StringVar(&g.secret, "client-secret", "app s3cret", "the OAuth app's client secret")
	fs.StringVar(&g.user, "user", "octocat", "the login of the user who approves")
	fs.IntVar(&g.pending, "pending", 1, "authorization_pending answers before the approval")
	fs.IntVar(&g.interval, "interval", 1, "the polling interval in seconds (slow_down answers it too)")
	fs.BoolVar(&g.slowDown, "slow-down", false, "answer slow_down once, after the pending answers")
	fs.BoolVar(&g.deny, "deny", false, "the user denies the device code (access_denied)")
	_ = fs.Parse(os.Args[1:])
	if *addrFile == "" || *logFile == "" || (g.mode != "github" && g.mode != "ghes" && g.mode != "legacy") {
		fs.Usage()
		os.Exit(2)
	}
	var err error
	if g.log, err = os.Create(*logFile); err != nil {
		fmt.Fprintln(os.Stderr, "fakegithub:", err)
		os.Exit(1)
	}
	ln := progutil.ListenLoopback("fakegithub")
	g.base = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /introspect", g.introspect)
	if g.mode == "legacy" {
		mux.HandleFunc("GET /authorize", g.authorize)
		mux.HandleFunc("POST /token", g.accessToken)
		mux.HandleFunc("POST /device", g.deviceCode)
		mux.HandleFunc("POST /revoke", g.revoke)
	} else {
		mux.HandleFunc("POST /login/device/code", g.deviceCode)
		mux.HandleFunc("GET /login/oauth/authorize", g.authorize)
		mux.HandleFunc("POST /login/oauth/access_token", g.accessToken)
		mux.HandleFunc("GET /user", g.userAPI)
		mux.HandleFunc("GET /api/v3/user", g.userAPI)
		if g.mode == "github" {
			mux.HandleFunc("GET /.well-known/oauth-authorization-server/login/oauth", g.metadata)
		}
	}
	progutil.ServeUntilInterrupt("fakegithub", ln, *addrFile, mux)
}

// logf writes one line to the request log.
func (g *fakeGitHub) logf(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fmt.Fprintf(g.log, format+"\n", args...)
}

// logRequest logs what a POST carried: the client id, whether a secret
// came (form or Basic), the Accept the answer follows, the grant type.
func (g *fakeGitHub) logRequest(r *http.Request) {
	_, _, basic := r.BasicAuth()
	accept := "form"
	if wantsJSON(r) {
		accept = "json"
	}
	g.logf("%s %s client_id=%s secret=%t accept=%s grant_type=%s scope=%q code_verifier=%t resource=%t",
		r.Method, r.URL.Path, r.PostForm.Get("client_id"), basic || r.PostForm.Has("client_secret"), accept,
		r.PostForm.Get("grant_type"), r.PostForm.Get("scope"), r.PostForm.Has("code_verifier"), r.PostForm.Has("resource"))
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// answer writes an OAuth answer as GitHub does: JSON when asked for,
// else form-encoded (the legacy server: always JSON, RFC 6749 §5.1);
// numbers stay numbers in JSON.
func (g *fakeGitHub) answer(w http.ResponseWriter, r *http.Request, status int, fields map[string]string) {
	if wantsJSON(r) || g.mode == "legacy" {
		doc := map[string]any{}
		for k, v := range fields {
			if n, err := strconv.Atoi(v); err == nil && (k == "interval" || k == "expires_in") {
				doc[k] = n
			} else {
				doc[k] = v
			}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(doc)
		return
	}
	v := url.Values{}
	for k, f := range fields {
		v.Set(k, f)
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(v.Encode()))
}

func randomString(prefix string) string {
	b := make([]byte, 15)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func (g *fakeGitHub) metadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"issuer": g.base + "/login/oauth", "authorization_endpoint": g.base + "/login/oauth/authorize",
		"token_endpoint": g.base + "/login/oauth/access_token", "device_authorization_endpoint": g.base + "/login/device/code",
		"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"},
		"code_challenge_methods_supported": []string{"S256"},
	})
}

// deviceCode is POST /login/device/code: an unknown client is 404, as
// GitHub answers it.
func (g *fakeGitHub) deviceCode(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	g.logRequest(r)
	if clientID(r) != g.clientID {
		g.answer(w, r, http.StatusNotFound, map[string]string{"error": "Not Found"})
		return
	}
	dc, uc := randomString("dc_"), fmt.Sprintf("%04X-%04X", randInt(0x10000), randInt(0x10000))
	g.mu.Lock()
	g.devices[dc] = &fakeDevice{scope: r.PostForm.Get("scope")}
	g.mu.Unlock()
	g.answer(w, r, http.StatusOK, map[string]string{"device_code": dc, "user_code": uc,
		"verification_uri": g.base + "/login/device", "expires_in": "900", "interval": strconv.Itoa(g.interval)})
}

func randInt(n int) int {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return int(uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])) % n
}

// authorize approves at once (the user authorized the app before) and
// redirects to the loopback redirect_uri, whatever its port.
func (g *fakeGitHub) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	g.logf("GET %s client_id=%s code_challenge=%t code_challenge_method=%s scope=%q resource=%t",
		r.URL.Path, q.Get("client_id"), q.Has("code_challenge"), q.Get("code_challenge_method"), q.Get("scope"), q.Has("resource"))
	ru, err := url.Parse(q.Get("redirect_uri"))
	if q.Get("client_id") != g.clientID || err != nil || ru.Scheme != "http" || (ru.Hostname() != "127.0.0.1" && ru.Hostname() != "localhost") || ru.Path != "/callback" {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	code := randomString("code_")
	c := fakeCode{clientID: q.Get("client_id"), redirectURI: ru.String(), scope: q.Get("scope")}
	if g.mode == "github" {
		c.challenge = q.Get("code_challenge")
	}
	g.mu.Lock()
	g.codes[code] = c
	g.mu.Unlock()
	v := ru.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	ru.RawQuery = v.Encode()
	http.Redirect(w, r, ru.String(), http.StatusFound)
}

// accessToken answers token requests. GitHub answers errors with 200;
// the legacy server with 400, as RFC 6749 §5.2 says.
func (g *fakeGitHub) accessToken(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	g.logRequest(r)
	fail := func(code, desc string) {
		status := http.StatusOK
		if g.mode == "legacy" {
			status = http.StatusBadRequest
		}
		g.answer(w, r, status, map[string]string{"error": code, "error_description": desc})
	}
	if r.PostForm.Get("grant_type") == "urn:ietf:params:oauth:grant-type:device_code" {
		g.pollDevice(w, r, fail)
		return
	}
	id, secret := clientCredentials(r)
	if id != g.clientID || secret != g.secret {
		fail("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
		return
	}
	g.mu.Lock()
	c, ok := g.codes[r.PostForm.Get("code")]
	delete(g.codes, r.PostForm.Get("code"))
	g.mu.Unlock()
	if !ok || c.clientID != id || c.redirectURI != r.PostForm.Get("redirect_uri") {
		fail("bad_verification_code", "The code passed is incorrect or expired.")
		return
	}
	if c.challenge != "" {
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			fail("bad_verification_code", "The code_verifier does not match the code_challenge.")
			return
		}
	}
	g.issue(w, r, id, c.scope)
}

func clientID(r *http.Request) string {
	id, _ := clientCredentials(r)
	return id
}

// clientCredentials are the client id and secret of a request: HTTP Basic
// (form-urlencoded, RFC 6749 §2.3.1) or the form.
func clientCredentials(r *http.Request) (id, secret string) {
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		return id, secret
	}
	return r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
}

// revoke is RFC 7009 on the legacy server, for its confidential client.
func (g *fakeGitHub) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	g.logRequest(r)
	if id, secret := clientCredentials(r); id != g.clientID || secret != g.secret {
		g.answer(w, r, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	g.mu.Lock()
	delete(g.tokens, r.PostForm.Get("token"))
	g.mu.Unlock()
}

func (g *fakeGitHub) pollDevice(w http.ResponseWriter, r *http.Request, fail func(code, desc string)) {
	g.mu.Lock()
	d, ok := g.devices[r.PostForm.Get("device_code")]
	var step string
	switch {
	case !ok || clientID(r) != g.clientID:
		step = "bad"
	case d.polls < g.pending:
		d.polls++
		step = "pending"
	case g.slowDown && !d.slowedDown:
		d.slowedDown = true
		step = "slow"
	case g.deny:
		step = "denied"
	default:
		delete(g.devices, r.PostForm.Get("device_code"))
		step = "ok"
	}
	g.mu.Unlock()
	switch step {
	case "bad":
		fail("incorrect_device_code", "The device_code provided is not valid.")
	case "pending":
		fail("authorization_pending", "The authorization request is still pending.")
	case "slow":
		// GitHub adds 5 s to the interval and says so; the fake keeps its
		// own interval, so that the script stays short.
		g.answer(w, r, http.StatusOK, map[string]string{"error": "slow_down", "error_description": "Too many requests have been made in the same timeframe.", "interval": strconv.Itoa(g.interval)})
	case "denied":
		fail("access_denied", "The authorization request was denied.")
	default:
		g.issue(w, r, g.clientID, d.scope)
	}
}

// issue answers with a new token, GitHub style: token_type bearer, the
// scopes separated by commas (by spaces on the legacy server).
func (g *fakeGitHub) issue(w http.ResponseWriter, r *http.Request, clientID, scope string) {
	tok := randomString("gho_")
	g.mu.Lock()
	g.tokens[tok] = fakeToken{clientID: clientID, scope: scope}
	g.mu.Unlock()
	sep := ","
	if g.mode == "legacy" {
		sep = " "
	}
	g.answer(w, r, http.StatusOK, map[string]string{"access_token": tok, "token_type": "bearer",
		"scope": strings.Join(strings.Fields(scope), sep)})
}

// userAPI is GET /user: the login of the token's owner, else 401 Bad
// credentials.
func (g *fakeGitHub) userAPI(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	tok := strings.TrimPrefix(strings.TrimPrefix(auth, "Bearer "), "token ")
	g.mu.Lock()
	_, ok := g.tokens[tok]
	g.mu.Unlock()
	g.logf("GET %s authorized=%t", r.URL.Path, ok)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`))
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"login": g.user, "id": 1, "type": "User"})
}

// introspect is RFC 7662 for the test hosts.
func (g *fakeGitHub) introspect(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	id, secret, _ := r.BasicAuth()
	secret, _ = url.QueryUnescape(secret)
	w.Header().Set("Content-Type", "application/json")
	if id != "rs" || secret != "rs s3cret" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	g.mu.Lock()
	t, ok := g.tokens[r.PostForm.Get("token")]
	g.mu.Unlock()
	if !ok {
		_, _ = w.Write([]byte(`{"active":false}`))
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "sub": g.user, "scope": t.scope, "client_id": t.clientID})
}
