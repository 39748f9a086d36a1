package host

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/internal/syncbuf"
	"github.com/agentauth/agentauth/wire"
	"github.com/coder/websocket"
)

// pushWait bounds how long a test waits for a push that must come; it only
// matters when the test fails.
const pushWait = 10 * time.Second

const baseConfig = `{"schemes": [
  {"id": "dev", "label": "Dev", "authorizationServers": ["embedded"], "scopesSupported": ["agent:use"],
   "validation": {"type": "static", "tokens": [
     {"token": "t-alice", "subject": "alice", "scopes": ["agent:use"]},
     {"token": "t-bob", "subject": "bob", "scopes": ["agent:use"]},
     {"token": "t-admin", "subject": "root", "scopes": ["agent:use", "agent:admin"]},
     {"token": "t-short", "subject": "shorty", "scopes": ["agent:use"], "expiresIn": "150ms"}]}}],
 "methodScopes": {"disposeSession": ["agent:admin"]}}`

func newTestHost(t *testing.T, config string, opts Options) *Host {
	t.Helper()
	c, err := ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	c.Resolve("http://127.0.0.1:7777")
	opts.Config = c
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// pipeConn connects a client to h over in-memory pipes, as stdio would.
// limit bounds the server side's messages.
func pipeConn(t *testing.T, h *Host, limit int64) wire.Conn {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	server := wire.NewStdioConn(c2sR, s2cW, multiCloser{c2sR, s2cW}, limit)
	client := wire.NewStdioConn(s2cR, c2sW, multiCloser{s2cR, c2sW}, 0)
	done := make(chan struct{})
	go func() { h.ServeConn(context.Background(), server); close(done) }()
	t.Cleanup(func() { client.Close(); <-done })
	return client
}

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	for _, c := range m {
		c.Close()
	}
	return nil
}

func dial(t *testing.T, h *Host) *wire.Client {
	t.Helper()
	return wire.NewClient(pipeConn(t, h, 0))
}

func initialized(t *testing.T, h *Host, d wire.Dialect) *wire.Client {
	t.Helper()
	c := dial(t, h)
	if _, err := wire.Initialize(context.Background(), c, d, "test"); err != nil {
		t.Fatal(err)
	}
	return c
}

// initializedWebSocket is initialized over a real WebSocket (the host's
// WebSocketHandler on a test server) in the design dialect.
func initializedWebSocket(t *testing.T, h *Host) *wire.Client {
	t.Helper()
	srv := httptest.NewServer(h.WebSocketHandler(""))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), pushWait)
	defer cancel()
	conn, err := wire.DialWebSocket(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), srv.Client(), 0)
	if err != nil {
		t.Fatal(err)
	}
	c := wire.NewClient(conn)
	t.Cleanup(func() { c.Close() })
	if _, err := wire.Initialize(ctx, c, wire.DialectDesign, "t"); err != nil {
		t.Fatal(err)
	}
	return c
}

func authenticate(t *testing.T, c *wire.Client, scheme, token string) error {
	t.Helper()
	return wire.Authenticate(context.Background(), c, wire.DialectDesign, wire.Requirement{SchemeID: scheme}, token)
}

func challenges(t *testing.T, err error) []wire.Challenge {
	t.Helper()
	var rpc *wire.Error
	if !errors.As(err, &rpc) {
		t.Fatalf("err = %v, want a JSON-RPC error", err)
	}
	d, ok := rpc.AuthRequired()
	if !ok {
		t.Fatalf("err = %v, want -32007", err)
	}
	return d.Challenges
}

func rpcCode(err error) int {
	var rpc *wire.Error
	if errors.As(err, &rpc) {
		return rpc.Code
	}
	return 0
}

// nextPush waits for a notification.
func nextPush(t *testing.T, c *wire.Client) *wire.Message {
	t.Helper()
	select {
	case m := <-c.Notifications():
		return m
	case <-time.After(pushWait):
		t.Fatal("no notification arrived")
		return nil
	}
}

func noPush(t *testing.T, c *wire.Client) {
	t.Helper()
	// A ping round trip orders every earlier push before its answer.
	if err := c.Call(context.Background(), wire.MethodPing, nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-c.Notifications():
		t.Errorf("unexpected notification %s %s", m.Method, m.Params)
	default:
	}
}

func designPush(t *testing.T, m *wire.Message) wire.NotifyAuthRequiredParams {
	t.Helper()
	if m.Method != wire.MethodNotifyAuthRequired {
		t.Fatalf("notification %q, want %s", m.Method, wire.MethodNotifyAuthRequired)
	}
	var p wire.NotifyAuthRequiredParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBeforeInitialize(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	c := dial(t, h)
	ctx := context.Background()
	if err := c.Call(ctx, wire.MethodPing, nil, nil); err != nil {
		t.Errorf("ping before initialize: %v", err)
	}
	for _, m := range []string{wire.MethodAuthenticate, wire.MethodWhoami, wire.MethodGetAuthState} {
		err := c.Call(ctx, m, map[string]string{}, nil)
		if rpcCode(err) != wire.CodeInvalidRequest || !strings.Contains(err.Error(), "call initialize before "+m) {
			t.Errorf("%s before initialize: %v, want -32600", m, err)
		}
	}
	if err := c.Call(ctx, "nope", nil, nil); rpcCode(err) != wire.CodeMethodNotFound {
		t.Errorf("unknown method: %v, want -32601", err)
	}
	if _, err := wire.Initialize(ctx, c, wire.DialectDesign, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.Initialize(ctx, c, wire.DialectDesign, "t"); rpcCode(err) != wire.CodeInvalidRequest {
		t.Errorf("second initialize: %v, want -32600", err)
	}
}

func TestInitializeDialects(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	ctx := context.Background()
	want := []wire.Requirement{{SchemeID: "dev", Label: "Dev", Resource: "http://127.0.0.1:7777/mcp",
		AuthorizationServers: []string{"http://127.0.0.1:7777"}, ScopesSupported: []string{"agent:use"}, Required: true}}
	for _, d := range []wire.Dialect{wire.DialectDesign, wire.DialectPublished} {
		res, err := wire.Initialize(ctx, dial(t, h), d, "t")
		if err != nil {
			t.Fatal(err)
		}
		if res.Dialect() != d {
			t.Errorf("%s: answered in %s", d, res.Dialect())
		}
		if diff := cmp.Diff(want, res.Requirements()); diff != "" {
			t.Errorf("%s requirements (-want +got):\n%s", d, diff)
		}
		if !res.AgentCapabilities.CanQueryAuthState() {
			t.Errorf("%s: auth state query not advertised", d)
		}
	}
	// The published snapshot alone carries the same requirements.
	var raw struct {
		Snapshots []wire.Snapshot `json:"snapshots"`
	}
	if err := dial(t, h).Call(ctx, wire.MethodInitialize, wire.NewInitializeParams(wire.DialectPublished, "t"), &raw); err != nil {
		t.Fatal(err)
	}
	res := wire.InitializeResult{Snapshots: raw.Snapshots, ProtocolVersion: json.RawMessage(`"0.9.0"`)}
	if diff := cmp.Diff(want, res.Requirements()); diff != "" {
		t.Errorf("snapshot requirements (-want +got):\n%s", diff)
	}
	var rpc *wire.Error
	err := dial(t, h).Call(ctx, wire.MethodInitialize, wire.InitializeParams{ProtocolVersions: []string{"2.0.0"}}, nil)
	if !errors.As(err, &rpc) || rpc.Code != wire.CodeUnsupportedVersion || !strings.Contains(string(rpc.Data), `"supportedVersions":["^1.0.0","^0.9.0"]`) {
		t.Errorf("unsupported version: %v", err)
	}
}

func TestChallengeSelection(t *testing.T) {
	const config = `{"schemes": [
	  {"id": "a", "scopesSupported": ["a:use"], "validation": {"type": "static", "tokens": [{"token": "ta", "subject": "alice", "scopes": ["a:use"]}, {"token": "ta-short", "subject": "alice", "expiresIn": "100ms"}]}},
	  {"id": "b", "validation": {"type": "static", "tokens": [{"token": "tb", "subject": "alice"}]}},
	  {"id": "opt", "required": false, "scopesSupported": ["agent:admin"], "validation": {"type": "static", "tokens": [{"token": "to", "subject": "alice", "scopes": ["agent:admin"]}]}}],
	 "methodScopes": {"disposeSession": ["agent:admin"]}}`
	h := newTestHost(t, config, Options{})
	ctx := context.Background()
	c := initialized(t, h, wire.DialectDesign)

	// No token: each required scheme is challenged with invalid_request;
	// the optional one is not.
	got := challenges(t, c.Call(ctx, wire.MethodWhoami, nil, nil))
	want := []wire.Challenge{
		{SchemeID: "a", Resource: "http://127.0.0.1:7777/mcp", Error: wire.ErrInvalidRequest, ErrorDescription: "No access token was provided", Scope: "a:use"},
		{SchemeID: "b", Resource: "http://127.0.0.1:7777/mcp/b", Error: wire.ErrInvalidRequest, ErrorDescription: "No access token was provided"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("no token (-want +got):\n%s", diff)
	}

	// One scheme authenticated: only the other is challenged.
	if err := authenticate(t, c, "a", "ta"); err != nil {
		t.Fatal(err)
	}
	if got := challenges(t, c.Call(ctx, wire.MethodEcho, nil, nil)); len(got) != 1 || got[0].SchemeID != "b" {
		t.Errorf("challenges = %+v, want only b", got)
	}

	// Both required schemes: allowed; the extra scope is missing, and the
	// scheme that can grant it is challenged with insufficient_scope.
	if err := authenticate(t, c, "b", "tb"); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, wire.MethodEcho, map[string]int{"n": 1}, nil); err != nil {
		t.Errorf("echo: %v", err)
	}
	got = challenges(t, c.Call(ctx, wire.MethodDisposeSession, map[string]string{"sessionId": "s1"}, nil))
	want = []wire.Challenge{{SchemeID: "opt", Resource: "http://127.0.0.1:7777/mcp/opt", Error: wire.ErrInvalidRequest, ErrorDescription: "No access token was provided", Scope: "agent:admin"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("missing scope, scheme not authenticated (-want +got):\n%s", diff)
	}
	// The optional scheme brings the scope.
	if err := authenticate(t, c, "opt", "to"); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, wire.MethodDisposeSession, map[string]string{"sessionId": "s1"}, nil); rpcCode(err) != wire.CodeInvalidParams {
		t.Errorf("disposeSession with the scope: %v, want the gate passed (-32602 no session)", err)
	}

	// A lapsed token is invalid_token, expired.
	if err := authenticate(t, c, "a", "ta-short"); err != nil {
		t.Fatal(err)
	}
	p := designPush(t, nextPush(t, c))
	if p.SchemeID != "a" || p.State != wire.StateExpired || p.Challenge == nil || p.Challenge.Error != wire.ErrInvalidToken {
		t.Errorf("push = %+v", p)
	}
	got = challenges(t, c.Call(ctx, wire.MethodWhoami, nil, nil))
	if len(got) != 1 || got[0].Error != wire.ErrInvalidToken || got[0].ErrorDescription != "The access token expired" {
		t.Errorf("after expiry: %+v", got)
	}

	// Unknown scheme, non-bearer scheme, unknown resource: -32602.
	for _, p := range []wire.AuthenticateParams{
		{SchemeID: "zzz", Scheme: "bearer", Token: "ta"},
		{SchemeID: "a", Scheme: "dpop", Token: "ta"},
		{Resource: "http://elsewhere.example/mcp", Token: "ta"},
		{Token: "ta"},
	} {
		if err := c.Call(ctx, wire.MethodAuthenticate, p, nil); rpcCode(err) != wire.CodeInvalidParams {
			t.Errorf("authenticate %+v: %v, want -32602", p, err)
		}
	}
	// A rejected token: -32007 invalid_token, never the token in the answer.
	err := authenticate(t, c, "b", "secret-wrong-token")
	if got := challenges(t, err); len(got) != 1 || got[0].Error != wire.ErrInvalidToken {
		t.Errorf("wrong token: %+v", got)
	}
	var rpc *wire.Error
	errors.As(err, &rpc)
	if strings.Contains(string(rpc.Data)+rpc.Message, "secret-wrong-token") {
		t.Error("the -32007 answer contains the token")
	}
}

func TestAuthStateQuery(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	ctx := context.Background()
	c := initialized(t, h, wire.DialectDesign)
	var st wire.AuthStateResult
	if err := c.Call(ctx, wire.MethodGetAuthState, nil, &st); err != nil {
		t.Fatal(err)
	}
	want := wire.AuthStateResult{Authenticated: false, Message: "1 required scheme is not authenticated",
		AuthMethods: []wire.AuthMethodState{{AuthMethodID: "dev", Authenticated: false, Message: "no token for http://127.0.0.1:7777/mcp"}}}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	if err := authenticate(t, c, "dev", "t-alice"); err != nil {
		t.Fatal(err)
	}
	var st2 wire.AuthStateResult
	if err := c.Call(ctx, wire.MethodAuthStatus, nil, &st2); err != nil {
		t.Fatal(err)
	}
	want = wire.AuthStateResult{Authenticated: true, Message: "every required scheme is authenticated",
		AuthMethods: []wire.AuthMethodState{{AuthMethodID: "dev", Authenticated: true, Message: "authenticated as alice"}}}
	if diff := cmp.Diff(want, st2); diff != "" {
		t.Errorf("after (-want +got):\n%s", diff)
	}
	// Signing out with an empty token.
	if err := c.Call(ctx, wire.MethodAuthenticate, wire.AuthenticateParams{SchemeID: "dev", Token: ""}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, wire.MethodGetAuthState, nil, &st); err != nil || st.Authenticated {
		t.Errorf("after sign-out: %+v, %v", st, err)
	}
}

func TestAuthScopeHost(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{AuthScope: AuthScopeHost})
	ctx := context.Background()
	a := initialized(t, h, wire.DialectDesign)
	b := initialized(t, h, wire.DialectDesign)
	p := initialized(t, h, wire.DialectPublished)

	if err := authenticate(t, b, "dev", "t-alice"); err != nil {
		t.Fatal(err)
	}
	// The others are told, the writer is not; the published dialect has
	// no "authenticated" push.
	if got := designPush(t, nextPush(t, a)); got.SchemeID != "dev" || got.State != wire.StateAuthenticated || got.Challenge != nil {
		t.Errorf("push to a = %+v", got)
	}
	noPush(t, b)
	noPush(t, p)
	var who map[string][]wire.WhoamiScheme
	if err := a.Call(ctx, wire.MethodWhoami, nil, &who); err != nil || who["schemes"][0].Subject != "alice" {
		t.Errorf("whoami on a: %+v, %v", who, err)
	}
	// Last writer wins.
	if err := authenticate(t, a, "dev", "t-bob"); err != nil {
		t.Fatal(err)
	}
	designPush(t, nextPush(t, b))
	if err := b.Call(ctx, wire.MethodWhoami, nil, &who); err != nil || who["schemes"][0].Subject != "bob" {
		t.Errorf("whoami on b: %+v, %v", who, err)
	}
	// An expiry reaches every connection, in its dialect.
	if err := authenticate(t, a, "dev", "t-short"); err != nil {
		t.Fatal(err)
	}
	designPush(t, nextPush(t, b)) // authenticated
	for _, c := range []*wire.Client{a, b} {
		if got := designPush(t, nextPush(t, c)); got.State != wire.StateExpired {
			t.Errorf("push = %+v, want expired", got)
		}
	}
	m := nextPush(t, p)
	var ap wire.AuthRequiredParams
	json.Unmarshal(m.Params, &ap)
	if m.Method != wire.MethodAuthRequired || ap.Reason != "expired" || ap.Resource.Resource != "http://127.0.0.1:7777/mcp" || ap.Channel != wire.RootChannel {
		t.Errorf("published push = %s %s", m.Method, m.Params)
	}
}

func TestAuthScopeConnection(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	ctx := context.Background()
	a := initialized(t, h, wire.DialectDesign)
	b := initialized(t, h, wire.DialectDesign)
	if err := authenticate(t, a, "dev", "t-alice"); err != nil {
		t.Fatal(err)
	}
	noPush(t, b)
	if got := challenges(t, b.Call(ctx, wire.MethodWhoami, nil, nil)); got[0].Error != wire.ErrInvalidRequest {
		t.Errorf("b = %+v, want no token", got)
	}
}

func TestSetAuthToken(t *testing.T) {
	ctx := context.Background()
	var logs strings.Builder
	h := newTestHost(t, baseConfig, Options{Logger: newTextLogger(&logs)})
	c := initialized(t, h, wire.DialectDesign)
	if err := c.Notify(ctx, wire.MethodSetAuthToken, "t-alice"); err != nil { // the bare string form
		t.Fatal(err)
	}
	if err := c.Call(ctx, wire.MethodWhoami, nil, nil); err != nil {
		t.Errorf("whoami after setAuthToken: %v", err)
	}
	c.Notify(ctx, wire.MethodSetAuthToken, wire.SetAuthTokenParams{Token: "bad-token"})
	if got := designPush(t, nextPush(t, c)); got.State != wire.StateRequired || got.Challenge.Error != wire.ErrInvalidToken {
		t.Errorf("push = %+v", got)
	}
	if n := strings.Count(logs.String(), "setAuthToken is deprecated: use the authenticate request instead"); n != 2 {
		t.Errorf("%d deprecation lines, want 2:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "t-alice") || strings.Contains(logs.String(), "bad-token") {
		t.Errorf("a token was logged:\n%s", logs.String())
	}

	// Two required schemes: setAuthToken cannot choose.
	h2 := newTestHost(t, `{"schemes": [
	  {"id": "a", "validation": {"type": "static", "tokens": [{"token": "ta", "subject": "alice"}]}},
	  {"id": "b", "validation": {"type": "static", "tokens": [{"token": "tb", "subject": "alice"}]}}]}`, Options{})
	c2 := initialized(t, h2, wire.DialectDesign)
	c2.Notify(ctx, wire.MethodSetAuthToken, "ta")
	for _, id := range []string{"a", "b"} {
		got := designPush(t, nextPush(t, c2))
		if got.SchemeID != id || got.State != wire.StateRequired || !strings.Contains(got.Challenge.ErrorDescription, "use authenticate") {
			t.Errorf("push = %+v", got)
		}
	}
}

func TestMalformedMessagesKeepTheConnection(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	conn := pipeConn(t, h, 256)
	ctx := context.Background()
	exchange := func(send string) *wire.Message {
		t.Helper()
		if err := conn.Write(ctx, []byte(send)); err != nil {
			t.Fatal(err)
		}
		b, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m, derr := wire.Decode(b)
		if derr != nil {
			t.Fatalf("answer %s: %v", b, derr)
		}
		return m
	}
	tests := []struct {
		send string
		code int
		id   string // "" for null
	}{
		{`not json`, wire.CodeParseError, ""},
		{`{"jsonrpc":"2.0","id":"x1","method":7}`, wire.CodeInvalidRequest, `"x1"`},
		{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, wire.CodeInvalidRequest, "3"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, wire.CodeInvalidRequest, ""},
		{`{"jsonrpc":"2.0","id":4,"method":"echo","params":"` + strings.Repeat("x", 300) + `"}`, wire.CodeInvalidRequest, ""},
		{`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"one"}}`, wire.CodeInvalidParams, "5"},
	}
	for _, tt := range tests {
		m := exchange(tt.send)
		if m.Error == nil || m.Error.Code != tt.code || m.ID.String() != tt.id {
			b, _ := wire.Encode(m)
			t.Errorf("%.40s: answer %s, want code %d id %s", tt.send, b, tt.code, tt.id)
		}
	}
	// Still serving.
	if m := exchange(`{"jsonrpc":"2.0","id":9,"method":"ping"}`); m.Error != nil || m.ID.String() != "9" {
		t.Errorf("ping after bad input: %+v", m)
	}
}

func TestDispatchAndValidateBearer(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	ctx := context.Background()
	req := func(method string, params any) *wire.Message {
		m, err := wire.NewRequest(wire.NumberID(1), method, params)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	_, ch, err := h.ValidateBearer(ctx, "")
	if err != nil || ch == nil || ch.Error != wire.ErrInvalidRequest || ch.SchemeID != "dev" {
		t.Errorf("no token: %+v, %v", ch, err)
	}
	_, ch, err = h.ValidateBearer(ctx, "t-wrong")
	if err != nil || ch == nil || ch.Error != wire.ErrInvalidToken {
		t.Errorf("wrong token: %+v, %v", ch, err)
	}
	alice, ch, err := h.ValidateBearer(ctx, "t-alice")
	if err != nil || ch != nil || alice.Subject != "alice" || alice.Scheme != "dev" {
		t.Fatalf("good token: %+v %+v %v", alice, ch, err)
	}

	if m := h.Dispatch(ctx, req(wire.MethodWhoami, nil)); m.Error == nil || m.Error.Code != wire.CodeAuthRequired {
		t.Errorf("whoami without grants: %+v", m)
	}
	m := h.Dispatch(ctx, req(wire.MethodWhoami, nil), alice)
	if m.Error != nil || !strings.Contains(string(m.Result), `"subject":"alice"`) {
		t.Errorf("whoami: %+v", m)
	}
	m = h.Dispatch(ctx, req(wire.MethodDisposeSession, map[string]string{"sessionId": "s1"}), alice)
	if d, ok := m.Error.AuthRequired(); !ok || d.Challenges[0].Error != wire.ErrInsufficientScope || d.Challenges[0].Scope != "agent:admin" {
		t.Errorf("insufficient scope: %+v", m.Error)
	}
	if m := h.Dispatch(ctx, req(wire.MethodAuthenticate, wire.AuthenticateParams{SchemeID: "dev", Token: "t-alice"})); m.Error == nil || m.Error.Code != wire.CodeMethodNotFound {
		t.Errorf("authenticate over Dispatch: %+v", m)
	}
	if m := h.Dispatch(ctx, req(wire.MethodInitialize, wire.NewInitializeParams(wire.DialectDesign, "t"))); m.Error != nil {
		t.Errorf("initialize: %+v", m.Error)
	}
	note, _ := wire.NewNotification(wire.MethodPing, nil)
	if m := h.Dispatch(ctx, note); m != nil {
		t.Errorf("a notification was answered: %+v", m)
	}
	md := h.ProtectedResourceMetadata()
	if md.Resource != "http://127.0.0.1:7777/mcp" || !cmp.Equal(md.AuthorizationServers, []string{"http://127.0.0.1:7777"}) || !cmp.Equal(md.ScopesSupported, []string{"agent:use"}) {
		t.Errorf("metadata = %+v", md)
	}
}

func TestWebSocketConnectionToken(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	srv := httptest.NewServer(h.WebSocketHandler("gate"))
	defer srv.Close()
	ctx := context.Background()
	base := "ws" + strings.TrimPrefix(srv.URL, "http")
	for _, u := range []string{base + "/", base + "/?tkn=nope", base + "/?tkn=gat"} {
		if _, err := wire.DialWebSocket(ctx, u, srv.Client(), 0); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
			t.Errorf("%s: err = %v, want HTTP 403", u, err)
		}
	}
	conn, err := wire.DialWebSocket(ctx, base+"/ws?tkn=gate", srv.Client(), 0)
	if err != nil {
		t.Fatal(err)
	}
	c := wire.NewClient(conn)
	defer c.Close()
	if _, err := wire.Initialize(ctx, c, wire.DialectDesign, "t"); err != nil {
		t.Error(err)
	}
}

// Close is serve's graceful shutdown: when it returns, every connection is
// closed and its close is logged, and no new connection is served.
func TestCloseEndsEveryConnection(t *testing.T) {
	var logs syncbuf.Buffer
	h := newTestHost(t, baseConfig, Options{Logger: newTextLogger(&logs)})
	ctx, cancel := context.WithTimeout(context.Background(), pushWait)
	defer cancel()
	c := initializedWebSocket(t, h)

	h.Close()
	if !strings.Contains(logs.String(), `msg="connection closed" conn=1 reason="host shutting down"`) {
		t.Errorf("Close returned before the connection was closed and logged:\n%s", logs.String())
	}
	if err := c.Call(ctx, wire.MethodPing, nil, nil); err == nil {
		t.Error("the connection still answers after Close")
	}
	if _, err := pipeConn(t, h, 0).Read(ctx); err == nil {
		t.Error("a connection opened after Close was served")
	}
}

// A binary WebSocket frame is not part of the protocol: the host answers it
// with -32600 and keeps serving the connection.
func TestBinaryFrameKeepsTheConnection(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	srv := httptest.NewServer(h.WebSocketHandler(""))
	defer srv.Close()
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := ws.Write(ctx, websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("after a binary frame: %v (the connection was closed)", err)
	}
	m, derr := wire.Decode(b)
	if derr != nil || m.Error == nil || m.Error.Code != wire.CodeInvalidRequest || !strings.Contains(m.Error.Message, "text frame") {
		t.Fatalf("binary frame answered with %s, want -32600 naming text frames", b)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	if _, b, err = ws.Read(ctx); err != nil || !strings.Contains(string(b), `"id":2,"result"`) {
		t.Fatalf("ping after the binary frame: %s, %v", b, err)
	}
}

// A connection that stops reading does not hold back the pushes to the
// others: with the host-wide auth scope each authenticate pushes to every
// other connection, and once the silent one's send queue is full it is
// closed with the reason logged, while the other's calls keep answering.
func TestSlowReaderIsClosedNotWaitedFor(t *testing.T) {
	var log syncbuf.Buffer
	h := newTestHost(t, baseConfig, Options{AuthScope: AuthScopeHost, Logger: newTextLogger(&log)})
	ctx := context.Background()

	// The silent connection: an unbuffered pipe, so every write the host
	// makes blocks until the peer reads, and after two answers it never does.
	silent := pipeConn(t, h, 0)
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"schemeId":"dev","token":"t-alice"}}`,
	} {
		if err := silent.Write(ctx, []byte(req)); err != nil {
			t.Fatal(err)
		}
		if _, err := silent.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}

	other := initialized(t, h, wire.DialectDesign)
	for i := range sendQueueSize + 2 {
		callCtx, cancel := context.WithTimeout(ctx, writeTimeout/2)
		err := wire.Authenticate(callCtx, other, wire.DialectDesign, wire.Requirement{SchemeID: "dev"}, "t-bob")
		cancel()
		if err != nil {
			t.Fatalf("authenticate %d: %v (stalled behind the silent connection?)", i+1, err)
		}
	}

	// The silent connection was closed: reading drains what was written
	// and then fails.
	readCtx, cancel := context.WithTimeout(ctx, pushWait)
	defer cancel()
	for {
		if _, err := silent.Read(readCtx); err != nil {
			if readCtx.Err() != nil {
				t.Fatal("the silent connection is still open")
			}
			break
		}
	}
	if !strings.Contains(log.String(), `msg="send queue full; closing the connection" conn=1 queued=64`) {
		t.Errorf("log:\n%s", log.String())
	}
}
