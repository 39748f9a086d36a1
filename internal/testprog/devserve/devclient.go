package devserve

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/agentauth/agentauth/wire"
)

// The serve_*.txtar scripts' helpers: devclient, a test-only OAuth and MCP
// client that talks real HTTP to `agentauth serve` (writing tokens to files,
// never to its output), and waitmatch, which waits for a log line.
func init() {
	programs["devclient"] = devclientMain
	cmds["waitmatch"] = waitMatch
}

// waitMatch waits until a file (a server's --log-file) has at least N lines
// matching a regular expression, polling; it fails after 30 s.
// Usage: waitmatch [-count=N] FILE REGEXP
func waitMatch(ts *testscript.TestScript, neg bool, args []string) {
	n := 1
	if len(args) > 0 && strings.HasPrefix(args[0], "-count=") {
		var err error
		if n, err = strconv.Atoi(strings.TrimPrefix(args[0], "-count=")); err != nil || n < 1 {
			ts.Fatalf("waitmatch: bad %s", args[0])
		}
		args = args[1:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitmatch [-count=N] FILE REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if len(re.FindAllIndex(b, -1)) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("timed out waiting for %d lines matching %q in %s", n, args[1], args[0])
}

// devclientUsage lists devclient's subcommands. TARGET is the MCP endpoint
// (http://HOST:PORT/mcp): every subcommand starts from discovery, as a
// client would (RFC 9728, then RFC 8414).
const devclientUsage = `usage: devclient COMMAND [flags] TARGET [ARGS]
  metadata                 check the metadata documents are valid and consistent
  authcode                 authorization code + PKCE + resource, through a scripted browser
  device                   device authorization grant, step by step
  refresh                  refresh grant (rotation)
  revoke                   RFC 7009 revocation
  introspect               RFC 7662 introspection
  register                 RFC 7591 dynamic client registration
  post TARGET BODY         POST BODY to TARGET; print status, WWW-Authenticate and body
  mcp                      an MCP client session: initialize, tools/list, tools/call whoami`

func devclientMain() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, devclientUsage)
		os.Exit(2)
	}
	cmds := map[string]func(*devclient, []string) error{
		"metadata": (*devclient).metadata, "authcode": (*devclient).authcode, "device": (*devclient).device,
		"refresh": (*devclient).refresh, "revoke": (*devclient).revoke, "introspect": (*devclient).introspect,
		"register": (*devclient).register, "post": (*devclient).post, "mcp": (*devclient).mcp,
	}
	run := cmds[os.Args[1]]
	if run == nil {
		fmt.Fprintln(os.Stderr, devclientUsage)
		os.Exit(2)
	}
	d := &devclient{hc: &http.Client{Timeout: 30 * time.Second}, out: os.Stdout}
	d.flags = flag.NewFlagSet(os.Args[1], flag.ContinueOnError)
	d.flags.StringVar(&d.clientFile, "client-file", "", "use the client registered in `FILE` (devclient register) instead of agentauth-cli")
	if err := run(d, os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "devclient:", err)
		os.Exit(1)
	}
}

type devclient struct {
	hc         *http.Client
	out        io.Writer
	flags      *flag.FlagSet
	clientFile string
	target     string
	discovery  *flows.ResourceDiscovery
	md         *wire.AuthServerMetadata
}

func (d *devclient) printf(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

// parse reads the flags, TARGET and then the other positional arguments.
func (d *devclient) parse(args []string, positional int) ([]string, error) {
	if err := d.flags.Parse(args); err != nil {
		return nil, err
	}
	if d.flags.NArg() != positional+1 {
		return nil, fmt.Errorf("%s wants TARGET and %d more argument(s)", d.flags.Name(), positional)
	}
	d.target = d.flags.Arg(0)
	return d.flags.Args()[1:], nil
}

// start reads the flags and TARGET alone, then runs RFC 9728 and RFC 8414
// discovery from the target.
func (d *devclient) start(args []string) error {
	if _, err := d.parse(args, 0); err != nil {
		return err
	}
	ctx := context.Background()
	var err error
	if d.discovery, err = flows.DiscoverResource(ctx, d.hc, d.target); err != nil {
		return err
	}
	d.md, err = flows.DiscoverAuthServer(ctx, d.hc, d.discovery)
	return err
}

// startClient is start, then the client.
func (d *devclient) startClient(args []string) (flows.Client, error) {
	if err := d.start(args); err != nil {
		return flows.Client{}, err
	}
	return d.client()
}

// client is agentauth-cli, or the one in -client-file.
func (d *devclient) client() (flows.Client, error) {
	if d.clientFile == "" {
		return flows.Client{ID: "agentauth-cli"}, nil
	}
	var r flows.Registration
	b, err := os.ReadFile(d.clientFile)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		return flows.Client{}, fmt.Errorf("cannot read the client: %w", err)
	}
	return r.Client(), nil
}

func (d *devclient) metadata(args []string) error {
	if err := d.start(args); err != nil {
		return err
	}
	disc, md := d.discovery, d.md
	d.printf("challenge: HTTP %d scope=%q error=%q", disc.Status, disc.Scope, disc.Error)
	d.printf("resource_metadata: %s", disc.MetadataURL)
	d.printf("resource: %s", disc.Resource)
	d.printf("authorization_servers: %s", strings.Join(disc.AuthorizationServers, " "))
	d.printf("scopes_supported: %s", strings.Join(disc.ScopesSupported(), " "))
	u, _ := url.Parse(d.target)
	var root wire.ProtectedResourceMetadata
	if err := getJSON(d.hc, u.Scheme+"://"+u.Host+"/.well-known/oauth-protected-resource", &root); err != nil {
		return err
	}
	// The root document names the origin its URL is built from (RFC 9728 §3.3).
	if want := u.Scheme + "://" + u.Host; root.Resource != want {
		return fmt.Errorf("the root protected resource metadata names %q, not the origin %q", root.Resource, want)
	}
	d.printf("root protected resource metadata: the origin")

	// flows checked issuer equality (RFC 8414 §3.3) and S256.
	d.printf("issuer: %s", md.Issuer)
	if !slices.Equal(disc.AuthorizationServers, []string{md.Issuer}) {
		return fmt.Errorf("authorization_servers %v is not the issuer %s", disc.AuthorizationServers, md.Issuer)
	}
	endpoints := map[string]string{"authorization_endpoint": md.AuthorizationEndpoint, "token_endpoint": md.TokenEndpoint,
		"jwks_uri": md.JWKSURI, "registration_endpoint": md.RegistrationEndpoint, "revocation_endpoint": md.RevocationEndpoint,
		"introspection_endpoint": md.IntrospectionEndpoint, "device_authorization_endpoint": md.DeviceAuthorizationEndpoint}
	for _, name := range slices.Sorted(maps.Keys(endpoints)) {
		if !strings.HasPrefix(endpoints[name], md.Issuer+"/") {
			return fmt.Errorf("%s %q is not under the issuer", name, endpoints[name])
		}
	}
	d.printf("endpoints under the issuer: %d", len(endpoints))
	d.printf("code_challenge_methods_supported: %s", strings.Join(md.CodeChallengeMethodsSupported, " "))
	d.printf("grant_types_supported: %s", strings.Join(md.GrantTypesSupported, " "))
	d.printf("token_endpoint_auth_methods_supported: %s", strings.Join(md.TokenEndpointAuthMethodsSupported, " "))
	d.printf("authorization_response_iss_parameter_supported: %t", md.AuthorizationResponseIssParameterSupported)

	var oidc wire.AuthServerMetadata
	if err := getJSON(d.hc, md.Issuer+"/.well-known/openid-configuration", &oidc); err != nil {
		return err
	}
	a, _ := json.Marshal(oidc)
	b, _ := json.Marshal(md)
	if !bytes.Equal(a, b) {
		return fmt.Errorf("openid-configuration differs:\n%s\n%s", a, b)
	}
	d.printf("openid-configuration: same document")

	var jwks struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := getJSON(d.hc, md.JWKSURI, &jwks); err != nil {
		return err
	}
	for _, k := range jwks.Keys {
		if _, private := k["d"]; private || k["kid"] == "" {
			return fmt.Errorf("bad key %v", k)
		}
		d.printf("jwks key: kty=%v crv=%v alg=%v use=%v", k["kty"], k["crv"], k["alg"], k["use"])
	}
	return nil
}

func getJSON(hc *http.Client, u string, v any) error {
	resp, err := hc.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		return fmt.Errorf("GET %s: %s %s", u, resp.Status, resp.Header.Get("Content-Type"))
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// tokenFlags are where a grant's tokens are written.
type tokenFlags struct{ token, refresh string }

func (d *devclient) tokenFlags() *tokenFlags {
	t := &tokenFlags{}
	d.flags.StringVar(&t.token, "token", "", "write the access token to `FILE`")
	d.flags.StringVar(&t.refresh, "refresh", "", "write the refresh token to `FILE`")
	return t
}

// save writes the tokens and prints what the access token says, never the
// token itself.
func (d *devclient) save(t *tokenFlags, tok *flows.Token) error {
	if t.token != "" {
		if err := os.WriteFile(t.token, []byte(tok.AccessToken+"\n"), 0o600); err != nil {
			return err
		}
	}
	if t.refresh != "" {
		if tok.RefreshToken == "" {
			return errors.New("no refresh token was issued")
		}
		if err := os.WriteFile(t.refresh, []byte(tok.RefreshToken+"\n"), 0o600); err != nil {
			return err
		}
	}
	return d.printClaims(tok.AccessToken)
}

// printClaims prints a JWT's header and claims (unverified: the host is
// what verifies).
func (d *devclient) printClaims(jwt string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("the access token is not a JWT")
	}
	var hdr struct{ Typ, Alg, Kid string }
	var c struct {
		Iss, Sub, Aud, Scope, Jti string
		ClientID                  string `json:"client_id"`
		Exp, Iat                  int64
	}
	for i, v := range []any{&hdr, &c} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(b, v) != nil {
			return errors.New("the access token is not a JWT")
		}
	}
	d.printf("access token: typ=%s alg=%s kid=%t iss=%s sub=%s aud=%s client_id=%s scope=%q jti=%t lifetime=%s",
		hdr.Typ, hdr.Alg, hdr.Kid != "", c.Iss, c.Sub, c.Aud, c.ClientID, c.Scope, c.Jti != "", time.Duration(c.Exp-c.Iat)*time.Second)
	return nil
}

func (d *devclient) authcode(args []string) error {
	t := d.tokenFlags()
	dc := d.flags.String("decide", "approve", "answer a consent page with `approve`, deny or as:NAME")
	scope := d.flags.String("scope", "", "scopes to ask for (default: the resource's scopes_supported)")
	resource := d.flags.String("resource", "", "resource indicator to send (default: the discovered resource)")
	client, err := d.startClient(args)
	if err != nil {
		return err
	}
	ctx := context.Background()
	scopes := d.discovery.ScopesSupported()
	if *scope != "" {
		scopes = strings.Fields(*scope)
	}
	req := flows.AuthCodeRequest{Metadata: d.md, Client: client, Scopes: scopes, Resource: cmp.Or(*resource, d.discovery.Resource),
		OpenURL: func(u string) error { return d.browse(u, decision(*dc)) }, Timeout: 30 * time.Second,
		// serve's own client, or one registered for the script: known to
		// the server, and the scripts count every authorization.
		NoPreflight: true}
	tok, err := flows.AuthorizationCode(ctx, d.hc, req)
	if err != nil {
		return err
	}
	return d.save(t, tok)
}

// device runs the device grant step by step (RFC 8628): the device
// authorization request, one poll (authorization_pending), then with
// -poll-twice an immediate second poll (slow_down) and stop; otherwise the
// scripted browser opens verification_uri_complete and answers the page
// with -decide, and after the interval one more poll reports the outcome.
func (d *devclient) device(args []string) error {
	t := d.tokenFlags()
	dc := d.flags.String("decide", "approve", "answer the device page with `approve`, deny or as:NAME")
	twice := d.flags.Bool("poll-twice", false, "poll twice at once and stop")
	client, err := d.startClient(args)
	if err != nil {
		return err
	}
	var da struct {
		DeviceCode              string `json:"device_code"`
		UserCode                string `json:"user_code"`
		VerificationURI         string `json:"verification_uri"`
		VerificationURIComplete string `json:"verification_uri_complete"`
		ExpiresIn               int    `json:"expires_in"`
		Interval                int    `json:"interval"`
	}
	form := url.Values{"client_id": {client.ID}, "resource": {d.discovery.Resource}}
	if err := d.postForm(d.md.DeviceAuthorizationEndpoint, form, 200, &da); err != nil {
		return err
	}
	d.printf("verification_uri: %s", da.VerificationURI)
	d.printf("verification_uri_complete carries the user code: %t", strings.Contains(da.VerificationURIComplete, url.QueryEscape(da.UserCode)))
	d.printf("expires_in: %d interval: %d", da.ExpiresIn, da.Interval)

	poll := url.Values{"grant_type": {wire.GrantDeviceCode}, "device_code": {da.DeviceCode}, "client_id": {client.ID}}
	pollOnce := func(n int) (map[string]any, error) {
		var answer map[string]any
		err := d.postForm(d.md.TokenEndpoint, poll, 0, &answer)
		if e, ok := answer["error"]; ok {
			d.printf("poll %d: %v (%v)", n, e, answer["error_description"])
		}
		return answer, err
	}
	if _, err := pollOnce(1); err != nil {
		return err
	}
	if *twice {
		_, err := pollOnce(2)
		return err
	}
	if err := d.browse(da.VerificationURIComplete, decision(*dc)); err != nil {
		return err
	}
	// RFC 8628 §3.5: wait the interval between polls.
	time.Sleep(time.Duration(da.Interval) * time.Second)
	answer, err := pollOnce(2)
	if err != nil {
		return err
	}
	at, _ := answer["access_token"].(string)
	if at == "" {
		return errors.New("no token")
	}
	rt, _ := answer["refresh_token"].(string)
	d.printf("poll 2: token")
	return d.save(t, &flows.Token{AccessToken: at, RefreshToken: rt})
}

// postForm POSTs a form and decodes the JSON answer into v; status, when
// not 0, is the status wanted.
func (d *devclient) postForm(endpoint string, form url.Values, status int, v any) error {
	resp, err := d.hc.PostForm(endpoint, form)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if status != 0 && resp.StatusCode != status {
		return fmt.Errorf("POST %s: %s", endpoint, resp.Status)
	}
	return json.Unmarshal(body, v)
}

func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

func (d *devclient) refresh(args []string) error {
	t := d.tokenFlags()
	from := d.flags.String("from", "", "read the refresh token from `FILE`")
	client, err := d.startClient(args)
	if err != nil {
		return err
	}
	ctx := context.Background()
	old, err := readSecret(*from)
	if err != nil {
		return err
	}
	tok, err := flows.Refresh(ctx, d.hc, flows.RefreshRequest{TokenEndpoint: d.md.TokenEndpoint, Client: client, RefreshToken: old, Resource: d.discovery.Resource})
	if err != nil {
		return err
	}
	d.printf("refresh token rotated: %t", tok.RefreshToken != old)
	return d.save(t, tok)
}

func (d *devclient) revoke(args []string) error {
	from := d.flags.String("from", "", "read the token to revoke from `FILE`")
	hint := d.flags.String("hint", "", "token_type_hint")
	client, err := d.startClient(args)
	if err != nil {
		return err
	}
	ctx := context.Background()
	tok, err := readSecret(*from)
	if err != nil {
		return err
	}
	if err := flows.Revoke(ctx, d.hc, flows.RevokeRequest{Endpoint: d.md.RevocationEndpoint, Client: client, Token: tok, TokenTypeHint: *hint}); err != nil {
		return err
	}
	d.printf("revoked")
	return nil
}

// introspect asks the introspection endpoint about a token with client
// credentials (-client-file, or -client-id and -client-secret) in HTTP
// Basic (RFC 7662 §2.1).
func (d *devclient) introspect(args []string) error {
	from := d.flags.String("from", "", "read the token from `FILE`")
	id := d.flags.String("client-id", "", "client id")
	secret := d.flags.String("client-secret", "", "client secret")
	if err := d.start(args); err != nil {
		return err
	}
	if d.clientFile != "" {
		c, err := d.client()
		if err != nil {
			return err
		}
		*id, *secret = c.ID, c.Secret
	}
	tok, err := readSecret(*from)
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodPost, d.md.IntrospectionEndpoint, strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(*id), url.QueryEscape(*secret))
	resp, err := d.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Active   bool   `json:"active"`
		Sub      string `json:"sub"`
		Aud      string `json:"aud"`
		Scope    string `json:"scope"`
		ClientID string `json:"client_id"`
		Error    string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&r); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("introspection: %s %s", resp.Status, r.Error)
	}
	d.printf("active: %t sub=%s aud=%s scope=%q client_id=%s", r.Active, r.Sub, r.Aud, r.Scope, r.ClientID)
	return nil
}

// register registers a client (RFC 7591) and writes the answer to -out:
// a public native client through flows.Register, or with -confidential a
// client_secret_basic one.
func (d *devclient) register(args []string) error {
	out := d.flags.String("out", "", "write the registration to `FILE`")
	confidential := d.flags.Bool("confidential", false, "register a confidential client (client_secret_basic)")
	redirect := d.flags.String("redirect-uri", "", "register this redirect URI instead of the loopback ones")
	if err := d.start(args); err != nil {
		return err
	}
	ctx := context.Background()
	var redirects []string
	if *redirect != "" {
		redirects = []string{*redirect}
	}
	var reg *flows.Registration
	if *confidential {
		body, _ := json.Marshal(map[string]any{"client_name": "devclient (confidential)", "redirect_uris": cmpSlice(redirects, flows.LoopbackRedirectURIs),
			"grant_types": []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken}, "token_endpoint_auth_method": flows.AuthMethodClientSecretBasic})
		resp, err := d.hc.Post(d.md.RegistrationEndpoint, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		reg = &flows.Registration{}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(reg); err != nil || resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("registration: %s", resp.Status)
		}
	} else {
		var err error
		if reg, err = flows.Register(ctx, d.hc, d.md.RegistrationEndpoint, flows.RegistrationRequest{ClientName: "devclient", RedirectURIs: redirects, Device: true}); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(reg)
	if err := os.WriteFile(*out, b, 0o600); err != nil {
		return err
	}
	d.printf("registered: auth_method=%s secret=%t grant_types=%s", reg.TokenEndpointAuthMethod, reg.ClientSecret != "", strings.Join(reg.GrantTypes, " "))
	return nil
}

func cmpSlice(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}

// post sends one raw request to the target: BODY with -token's bearer
// token in the Authorization header (or -query, or -form), and prints the
// status, the WWW-Authenticate and Allow headers, the Content-Type and the
// body. The token is never printed.
func (d *devclient) post(args []string) error {
	from := d.flags.String("token", "", "send the token in `FILE` as Authorization: Bearer")
	query := d.flags.Bool("query", false, "send the token as ?access_token= instead")
	form := d.flags.Bool("form", false, "send the token as a form field access_token instead, with BODY as the form's other content")
	method := d.flags.String("method", http.MethodPost, "HTTP method")
	rest, err := d.parse(args, 1)
	if err != nil {
		return err
	}
	var tok string
	if *from != "" {
		if tok, err = readSecret(*from); err != nil {
			return err
		}
	}
	target, body, ct := d.target, rest[0], "application/json"
	switch {
	case *query:
		target += "?" + url.Values{"access_token": {tok}}.Encode()
	case *form:
		body, ct = url.Values{"access_token": {tok}, "body": {body}}.Encode(), "application/x-www-form-urlencoded"
	}
	req, err := http.NewRequest(*method, target, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ct)
	if tok != "" && !*query && !*form {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return progutil.PrintAnswer(d.out, resp, tok)
}

// mcp runs an MCP client session over Streamable HTTP (wire.HTTPSession)
// with -token: initialize, tools/list, tools/call whoami.
func (d *devclient) mcp(args []string) error {
	from := d.flags.String("token", "", "bearer token `FILE`")
	if _, err := d.parse(args, 0); err != nil {
		return err
	}
	tok, err := readSecret(*from)
	if err != nil {
		return err
	}
	ctx := context.Background()
	s, err := wire.NewHTTPSession(d.target, d.hc, func(context.Context) (string, error) { return tok, nil })
	if err != nil {
		return err
	}
	res, err := s.Initialize(ctx, "devclient", "0")
	if err != nil {
		return err
	}
	d.printf("initialize: protocolVersion=%s server=%s %s", res.ProtocolVersion, res.ServerInfo.Name, res.ServerInfo.Version)
	var tools struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := s.Call(ctx, "tools/list", map[string]any{}, &tools); err != nil {
		return err
	}
	for _, t := range tools.Tools {
		d.printf("tool: %s %s", t.Name, t.InputSchema)
	}
	var out struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError bool                          `json:"isError"`
	}
	if err := s.Call(ctx, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, &out); err != nil {
		return err
	}
	for _, c := range out.Content {
		d.printf("whoami %s: %s", c.Type, c.Text)
	}
	return s.Close(ctx)
}
