package gosdk

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// The sdk_go_*.txtar scripts' programs: the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk) on either end of agentauth.
//   - gosdkclient: the SDK's client (Streamable HTTP) against serve's /mcp;
//   - gosdkserver: the SDK's server behind its own bearer-token middleware
//     and RFC 9728 metadata, naming serve's embedded issuer, for
//     agentauth's client.
func init() {
	programs["gosdkclient"] = goSDKClientMain
	programs["gosdkserver"] = goSDKServerMain
}

// goSDKTimeout bounds each SDK program's whole run.
const goSDKTimeout = 30 * time.Second

// goSDKClientMain connects the SDK's client to URL and prints, one line
// each: the negotiated protocol version, the tool names, and whoami's
// text. Without a token it prints what the SDK saw of the refusal (the
// status and WWW-Authenticate its OAuthHandler is given, and the RFC 9728
// metadata the SDK's oauthex fetches from the challenge), then the error.
// With -login the SDK's own authorization code handler signs in (dynamic
// registration, PKCE, RFC 9207 iss), its "browser" following the
// authorization URL to the redirect. With -upstream ID it calls
// upstream_call for that upstream instead of whoami and answers serve's
// sign-in request as the SDK surfaces it: on 2026-07-28 the SDK's
// multi-round-trip support calls its ElicitationHandler (url mode) and
// retries by itself; on 2025-11-25 CallTool fails with -32042, and this
// program opens the url, polls /auth-status and calls again. The
// "browser" follows the url with a cookie jar.
//
// -answer decline (or cancel) makes the ElicitationHandler refuse instead;
// -form-only declares form elicitations only, and prints the capabilities
// a -32021 answer requires (the SDK's MissingRequiredClientCapabilityData).
//
// Usage: gosdkclient [-token FILE] [-login] [-version V] [-upstream ID [-answer ACTION] [-form-only]] URL
func goSDKClientMain() {
	fs := flag.NewFlagSet("gosdkclient", flag.ExitOnError)
	tokenFile := fs.String("token", "", "file holding the bearer token")
	login := fs.Bool("login", false, "sign in with the SDK's authorization code handler")
	version := fs.String("version", "", "MCP protocol version to ask for (default: the SDK's latest)")
	upstream := fs.String("upstream", "", "call upstream_call for this upstream instead of whoami")
	answer := fs.String("answer", "accept", "the ElicitationHandler's action: accept (after the browser), decline or cancel")
	formOnly := fs.Bool("form-only", false, "with -upstream, declare form elicitations only")
	fs.Parse(os.Args[1:])
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gosdkclient [-token FILE] [-login] [-version V] [-upstream ID [-answer ACTION] [-form-only]] URL")
		os.Exit(2)
	}
	if err := goSDKClient(fs.Arg(0), *tokenFile, *login, *version, *upstream, *answer, *formOnly); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func goSDKClient(endpoint, tokenFile string, login bool, version, upstream, answer string, formOnly bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), goSDKTimeout)
	defer cancel()
	h := &recordingHandler{}
	switch {
	case tokenFile != "":
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return err
		}
		h.ts = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: strings.TrimSpace(string(b)), TokenType: "Bearer"})
	case login:
		inner, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
				Metadata: &oauthex.ClientRegistrationMetadata{
					ClientName:              "go-sdk test client",
					RedirectURIs:            []string{goSDKRedirect},
					TokenEndpointAuthMethod: "none",
				},
			},
			AuthorizationCodeFetcher: followToRedirect,
		})
		if err != nil {
			return err
		}
		h.inner = inner
	}
	var opts *mcp.ClientOptions
	if upstream != "" {
		opts = &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				fmt.Printf("elicitation/create: mode=%s url=%s\n", req.Params.Mode, req.Params.URL)
				if answer != "accept" {
					return &mcp.ElicitResult{Action: answer}, nil
				}
				if err := browse(ctx, req.Params.URL); err != nil {
					return nil, err
				}
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		}
		if formOnly {
			opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gosdkclient", Version: "1.0.0"}, opts)
	transport := &mcp.StreamableClientTransport{Endpoint: endpoint, OAuthHandler: h, DisableStandaloneSSE: true}
	session, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		h.report(ctx, endpoint)
		return err
	}
	defer session.Close()
	if h.status != 0 {
		fmt.Printf("refused first: %d\n", h.status)
	}
	fmt.Println("protocol:", session.InitializeResult().ProtocolVersion)
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	fmt.Println("tools:", strings.Join(names, " "))
	params := &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}
	var res *mcp.CallToolResult
	if upstream != "" {
		params = &mcp.CallToolParams{Name: "upstream_call", Arguments: map[string]any{"upstream": upstream}}
		ts, _ := h.TokenSource(ctx)
		res, err = callUpstream(ctx, session, params, endpoint, upstream, ts)
	} else {
		res, err = session.CallTool(ctx, params)
	}
	if err != nil {
		return err
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Printf("%s: %s\n", params.Name, strings.Join(strings.Fields(t.Text), " "))
		}
	}
	fmt.Println("isError:", res.IsError)
	return nil
}

// callUpstream calls upstream_call; a -32042 URLElicitationRequiredError
// (MCP 2025-11-25) is answered by hand: open each url, poll /auth-status
// until the upstream is signed in, call again.
func callUpstream(ctx context.Context, session *mcp.ClientSession, params *mcp.CallToolParams, endpoint, upstream string, ts oauth2.TokenSource) (*mcp.CallToolResult, error) {
	res, err := session.CallTool(ctx, params)
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code == mcp.CodeMissingRequiredClientCapabilities {
		var data mcp.MissingRequiredClientCapabilityData
		if err := json.Unmarshal(rpcErr.Data, &data); err != nil {
			return nil, err
		}
		b, _ := json.Marshal(data.RequiredCapabilities)
		fmt.Printf("required capabilities: %s\n", b)
		return nil, err
	}
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
		return res, err
	}
	var data struct {
		Elicitations []*mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(rpcErr.Data, &data); err != nil {
		return nil, err
	}
	fmt.Printf("error %d: %s (%d elicitations)\n", rpcErr.Code, rpcErr.Message, len(data.Elicitations))
	for _, e := range data.Elicitations {
		fmt.Printf("elicitation: mode=%s url=%s\n", e.Mode, e.URL)
		if err := browse(ctx, e.URL); err != nil {
			return nil, err
		}
	}
	if ts == nil {
		return nil, errors.New("polling /auth-status needs a token")
	}
	tok, err := ts.Token()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	statusURL := u.Scheme + "://" + u.Host + "/auth-status?upstream=" + url.QueryEscape(upstream)
	for i := 0; ; i++ {
		var st struct {
			Authenticated bool `json:"authenticated"`
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, statusURL, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		if err := doJSON(req, &st); err != nil {
			return nil, err
		}
		if st.Authenticated {
			fmt.Println("auth-status: authenticated")
			break
		}
		if i == goSDKPolls {
			return nil, errors.New("auth-status: still not signed in")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return session.CallTool(ctx, params)
}

// goSDKPolls bounds the /auth-status polling (100 ms apart).
const goSDKPolls = 100

// browse is the user's browser for serve's sign-in url: it follows the
// redirects with a cookie jar and prints each hop and the final page's
// title.
func browse(ctx context.Context, u string) error {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	hc := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		fmt.Printf("browser: %s %s -> %d\n", via[len(via)-1].URL.Host, via[len(via)-1].URL.Path, req.Response.StatusCode)
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	fmt.Printf("browser: %s %s -> %d\n", resp.Request.URL.Host, resp.Request.URL.Path, resp.StatusCode)
	if m := progutil.TitleRE.FindSubmatch(body); m != nil {
		fmt.Printf("page: %s\n", m[1])
	}
	return nil
}

// goSDKRedirect is the SDK client's registered redirect URI; nothing
// listens there: followToRedirect stops at the redirect.
const goSDKRedirect = "http://127.0.0.1:1/callback"

// followToRedirect is the SDK client's "browser": it follows the
// authorization URL (serve --auto-approve redirects at once) until the
// redirect to goSDKRedirect, and returns its code, state and iss.
func followToRedirect(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	next := args.URL
	for range 10 {
		if strings.HasPrefix(next, goSDKRedirect) {
			u, err := url.Parse(next)
			if err != nil {
				return nil, err
			}
			q := u.Query()
			if e := q.Get("error"); e != "" {
				return nil, fmt.Errorf("authorization refused: %s", e)
			}
			fmt.Println("browser: redirected with code, state and iss")
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			return nil, fmt.Errorf("browser: %s answered %s without a redirect", next, resp.Status)
		}
		next = loc.String()
	}
	return nil, errors.New("browser: too many redirects")
}

// recordingHandler is the SDK client's auth.OAuthHandler: it hands the
// transport a token (static, or from the SDK's own handler) and records the
// refusal the SDK passes to Authorize.
type recordingHandler struct {
	ts     oauth2.TokenSource
	inner  *auth.AuthorizationCodeHandler
	status int
	www    []string
}

func (h *recordingHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	if h.inner != nil {
		return h.inner.TokenSource(ctx)
	}
	return h.ts, nil
}

func (h *recordingHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.status = resp.StatusCode
	h.www = resp.Header.Values("WWW-Authenticate")
	if h.inner != nil {
		return h.inner.Authorize(ctx, req, resp)
	}
	resp.Body.Close()
	return errors.New("no token")
}

// report prints the refusal the SDK saw and what the SDK's oauthex makes of
// it: the challenge's resource_metadata, fetched and checked against the
// endpoint (RFC 9728 §3.3).
func (h *recordingHandler) report(ctx context.Context, endpoint string) {
	if h.status == 0 {
		return
	}
	fmt.Println("status:", h.status)
	for _, v := range h.www {
		fmt.Println("www-authenticate:", v)
	}
	cs, err := oauthex.ParseWWWAuthenticate(h.www)
	if err != nil {
		fmt.Println("challenge error:", err)
		return
	}
	for _, c := range cs {
		rm := c.Params["resource_metadata"]
		if rm == "" {
			continue
		}
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, rm, endpoint, http.DefaultClient)
		if err != nil {
			fmt.Println("metadata error:", err)
			continue
		}
		fmt.Printf("metadata: resource=%s authorization_servers=%s scopes=%s\n",
			prm.Resource, strings.Join(prm.AuthorizationServers, ","), strings.Join(prm.ScopesSupported, ","))
	}
}

// goSDKServerMain runs the SDK's Streamable HTTP server on 127.0.0.1:0
// behind auth.RequireBearerToken (scope agent:use), with its RFC 9728
// metadata at /.well-known/oauth-protected-resource/mcp naming ISSUER, and
// writes its address to ADDRFILE. Tokens are the issuer's RFC 9068 JWTs,
// verified against its JWKS (ES256), iss, aud (this server's /mcp) and
// exp; with -deny FILE, tokens listed there (one a line, read on each
// request) are refused as a revoked token would be. Its one tool, whoami,
// answers the token's subject, client and scopes. It stops on SIGINT.
//
// The SDK's handler serves MCP 2026-07-28 (server/discover) only when
// stateless (-stateless); otherwise it lists 2025-11-25 and earlier.
//
// Usage: gosdkserver [-deny FILE] [-stateless] ADDRFILE ISSUER
func goSDKServerMain() {
	fs := flag.NewFlagSet("gosdkserver", flag.ExitOnError)
	deny := fs.String("deny", "", "file of tokens to refuse")
	stateless := fs.Bool("stateless", false, "serve statelessly (the SDK's handler speaks MCP 2026-07-28 only then)")
	fs.Parse(os.Args[1:])
	if fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: gosdkserver [-deny FILE] [-stateless] ADDRFILE ISSUER")
		os.Exit(2)
	}
	if err := goSDKServer(fs.Arg(0), fs.Arg(1), *deny, *stateless); err != nil {
		fmt.Fprintln(os.Stderr, "gosdkserver:", err)
		os.Exit(1)
	}
}

func goSDKServer(addrFile, issuer, deny string, stateless bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	resource := base + "/mcp"
	keys, err := issuerKeys(ctx, issuer)
	if err != nil {
		return err
	}
	verify := func(_ context.Context, raw string, _ *http.Request) (*auth.TokenInfo, error) {
		if denied, _ := os.ReadFile(deny); deny != "" && slices.Contains(strings.Fields(string(denied)), raw) {
			return nil, fmt.Errorf("%w: revoked", auth.ErrInvalidToken)
		}
		tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		var claims jwt.Claims
		var extra struct {
			Scope    string `json:"scope"`
			ClientID string `json:"client_id"`
		}
		if err := tok.Claims(keys, &claims, &extra); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		if err := claims.Validate(jwt.Expected{Issuer: issuer, AnyAudience: jwt.Audience{resource}, Time: time.Now()}); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{
			UserID:     claims.Subject,
			Scopes:     strings.Fields(extra.Scope),
			Expiration: claims.Expiry.Time(),
			Extra:      map[string]any{"client_id": extra.ClientID},
		}, nil
	}

	server := mcp.NewServer(&mcp.Implementation{Name: "gosdkserver", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "the caller's token"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ti := req.Extra.TokenInfo
			text := fmt.Sprintf("subject=%s client_id=%v scopes=%s", ti.UserID, ti.Extra["client_id"], strings.Join(ti.Scopes, ","))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{issuer},
		ScopesSupported:        []string{"agent:use"},
		BearerMethodsSupported: []string{"header"},
	}))
	bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: base + "/.well-known/oauth-protected-resource/mcp",
		Scopes:              []string{"agent:use"},
	})
	mux.Handle("/mcp", bearer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: stateless})))
	srv := &http.Server{Handler: mux}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
		return err
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// issuerKeys fetches the issuer's JWKS through its RFC 8414 metadata.
func issuerKeys(ctx context.Context, issuer string) (*jose.JSONWebKeySet, error) {
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := getJSONCtx(ctx, issuer+"/.well-known/oauth-authorization-server", &meta); err != nil {
		return nil, err
	}
	var keys jose.JSONWebKeySet
	if err := getJSONCtx(ctx, meta.JWKSURI, &keys); err != nil {
		return nil, err
	}
	return &keys, nil
}

func getJSONCtx(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return doJSON(req, v)
}

func doJSON(req *http.Request, v any) error {
	u := req.URL.String()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
