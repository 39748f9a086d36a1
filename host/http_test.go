package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/internal/tokenfake"
	"github.com/agentauth/agentauth/mcpserver"
	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

const testMetadataURL = "http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp"

// httpAnswer is one answer of the HTTP face.
type httpAnswer struct {
	status int
	header http.Header
	body   string
}

// rpc decodes the answer's JSON-RPC message.
func (a httpAnswer) rpc(t *testing.T) *wire.Message {
	t.Helper()
	m, derr := wire.Decode([]byte(a.body))
	if derr != nil {
		t.Fatalf("body %q: %v", a.body, derr)
	}
	return m
}

// post sends body to the HTTP face with the given headers ("Content-Type"
// defaults to application/json).
func post(t *testing.T, h http.Handler, target, body string, header map[string][]string) httpAnswer {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		r.Header.Del(k)
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return httpAnswer{status: w.Code, header: w.Header(), body: w.Body.String()}
}

func bearer(token string) map[string][]string {
	return map[string][]string{"Authorization": {"Bearer " + token}}
}

func TestHTTPResourceMetadata(t *testing.T) {
	for _, tc := range []struct {
		resource, metadataURL string
		paths                 []string
		// root is the resource the root document names: the origin,
		// which its URL is built from (RFC 9728 §3.3).
		root string
	}{
		{"http://127.0.0.1:7777/mcp", testMetadataURL,
			[]string{"/.well-known/oauth-protected-resource/mcp"}, "http://127.0.0.1:7777"},
		{"https://mcp.example/api/v1/", "https://mcp.example/.well-known/oauth-protected-resource/api/v1",
			[]string{"/.well-known/oauth-protected-resource/api/v1"}, "https://mcp.example"},
		{"http://127.0.0.1:7777", "http://127.0.0.1:7777/.well-known/oauth-protected-resource",
			[]string{"/.well-known/oauth-protected-resource"}, "http://127.0.0.1:7777"},
	} {
		tc.paths = append(tc.paths, "/.well-known/oauth-protected-resource")
		config := `{"resource": "` + tc.resource + `", "schemes": [{"id": "dev", "authorizationServers": ["embedded"], "scopesSupported": ["agent:use"],
		  "validation": {"type": "static", "tokens": [{"token": "t", "subject": "s"}]}}]}`
		h := newTestHost(t, config, Options{})
		if got := h.ResourceMetadataURL(); got != tc.metadataURL {
			t.Errorf("%s: ResourceMetadataURL = %s, want %s", tc.resource, got, tc.metadataURL)
		}
		for _, p := range tc.paths {
			w := httptest.NewRecorder()
			h.HTTPHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, p, nil))
			var md wire.ProtectedResourceMetadata
			if err := json.Unmarshal(w.Body.Bytes(), &md); w.Code != http.StatusOK || err != nil {
				t.Fatalf("GET %s: %d %s", p, w.Code, w.Body)
			}
			res := tc.resource
			if p == "/.well-known/oauth-protected-resource" {
				res = tc.root
			}
			want := wire.ProtectedResourceMetadata{Resource: res, AuthorizationServers: []string{"http://127.0.0.1:7777"},
				ScopesSupported: []string{"agent:use"}, BearerMethodsSupported: []string{"header"}, DPoPSigningAlgValuesSupported: []string{"ES256"}}
			if diff := cmp.Diff(want, md); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", p, diff)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("GET %s: Content-Type %q", p, ct)
			}
		}
	}
}

func TestHTTPChallengeHeaders(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{}).HTTPHandler()
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name   string
		target string
		body   string
		header map[string][]string
		status int
		want   string // WWW-Authenticate, exactly
	}{
		{"no token", "/mcp", ping, nil, 401,
			`Bearer resource_metadata="` + testMetadataURL + `", scope="agent:use"`},
		{"another scheme counts as no token", "/mcp", ping, map[string][]string{"Authorization": {"Basic YTpi"}}, 401,
			`Bearer resource_metadata="` + testMetadataURL + `", scope="agent:use"`},
		{"unknown token", "/mcp", ping, bearer("t-wrong"), 401,
			`Bearer error="invalid_token", error_description="The access token is not recognised", resource_metadata="` + testMetadataURL + `", scope="agent:use"`},
		{"lower-case scheme name", "/mcp", ping, map[string][]string{"Authorization": {"bearer t-wrong"}}, 401,
			`Bearer error="invalid_token", error_description="The access token is not recognised", resource_metadata="` + testMetadataURL + `", scope="agent:use"`},
		{"token in the query string", "/mcp?access_token=t-alice", ping, nil, 400,
			`Bearer error="invalid_request", error_description="An access token in the query string is refused: send it in the Authorization header (RFC 6750 section 2.1)", resource_metadata="` + testMetadataURL + `"`},
		{"token in the query string beside a good header", "/mcp?access_token=t-alice", ping, bearer("t-alice"), 400,
			`Bearer error="invalid_request", error_description="An access token in the query string is refused: send it in the Authorization header (RFC 6750 section 2.1)", resource_metadata="` + testMetadataURL + `"`},
		{"token in a form body", "/mcp", "access_token=t-alice", map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}, 400,
			`Bearer error="invalid_request", error_description="An access token in the request body is refused: send it in the Authorization header (RFC 6750 section 2.1)", resource_metadata="` + testMetadataURL + `"`},
		{"two Authorization headers", "/mcp", ping, map[string][]string{"Authorization": {"Bearer t-alice", "Bearer t-bob"}}, 400,
			`Bearer error="invalid_request", error_description="The request has more than one Authorization header", resource_metadata="` + testMetadataURL + `"`},
		{"Bearer without a token", "/mcp", ping, map[string][]string{"Authorization": {"Bearer "}}, 400,
			`Bearer error="invalid_request", error_description="The Authorization header must be Bearer followed by one token (RFC 6750 section 2.1)", resource_metadata="` + testMetadataURL + `"`},
		{"Bearer with two tokens", "/mcp", ping, map[string][]string{"Authorization": {"Bearer t-alice t-bob"}}, 400,
			`Bearer error="invalid_request", error_description="The Authorization header must be Bearer followed by one token (RFC 6750 section 2.1)", resource_metadata="` + testMetadataURL + `"`},
		{"missing scope", "/mcp", `{"jsonrpc":"2.0","id":7,"method":"disposeSession","params":{"sessionId":"s1"}}`, bearer("t-alice"), 403,
			`Bearer error="insufficient_scope", error_description="disposeSession needs scope agent:admin", resource_metadata="` + testMetadataURL + `", scope="agent:admin"`},
		{"good token", "/mcp", ping, bearer("t-alice"), 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := post(t, h, tc.target, tc.body, tc.header)
			if a.status != tc.status {
				t.Fatalf("status = %d, want %d; body %s", a.status, tc.status, a.body)
			}
			if got := a.header.Values("WWW-Authenticate"); tc.want == "" && len(got) != 0 || tc.want != "" && !cmp.Equal(got, []string{tc.want}) {
				t.Errorf("WWW-Authenticate =\n %q\nwant\n %q", got, tc.want)
			}
			m := a.rpc(t)
			if strings.Contains(a.body, "t-alice") || strings.Contains(a.body, "t-wrong") {
				t.Errorf("the body echoes a token: %s", a.body)
			}
			switch {
			case tc.status == 200 && m.Error != nil:
				t.Errorf("error %+v", m.Error)
			case tc.status == 401 || tc.status == 403:
				if _, ok := m.Error.AuthRequired(); !ok {
					t.Errorf("body error %+v, want -32007", m.Error)
				}
			case tc.status == 400 && m.Error.Code != wire.CodeInvalidRequest:
				t.Errorf("body error %+v, want -32600", m.Error)
			}
			if tc.status == 403 && m.ID.String() != "7" {
				t.Errorf("403 answers id %s, want 7", m.ID)
			}
		})
	}
}

// A description taken from a token (here its issuer) cannot break the
// header: error_description keeps to RFC 6750 §3's characters and every
// value is a quoted-string that parses back.
func TestHTTPChallengeEscaping(t *testing.T) {
	ti := tokenfake.NewIssuer(t)
	k := tokenfake.NewKey(t, "k", jose.ES256)
	ti.Publish(k)
	config := `{"resource": "` + testResource + `", "schemes": [{"id": "as", "authorizationServers": ["` + ti.URL + `"],
	  "scopesSupported": ["agent:use", "agent:admin"], "validation": {"type": "jwt"}}]}`
	h := newTestHost(t, config, Options{HTTPClient: ti.Client()}).HTTPHandler()
	c := tokenfake.Claims(`ev"il\`+"\n"+`é`, testResource, time.Now())
	a := post(t, h, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, bearer(k.Sign(t, c, "at+jwt")))
	want := `Bearer error="invalid_token", error_description="The access token's issuer 'ev/'il///n?' is not trusted", resource_metadata="` +
		testMetadataURL + `", scope="agent:use agent:admin"`
	if got := a.header.Get("WWW-Authenticate"); a.status != 401 || got != want {
		t.Fatalf("%d WWW-Authenticate =\n %s\nwant\n %s", a.status, got, want)
	}
	ch, ok := wire.BearerChallenge(a.header.Values("WWW-Authenticate"))
	if !ok || ch.Param("scope") != "agent:use agent:admin" || ch.Param("resource_metadata") != testMetadataURL || ch.Param("error") != "invalid_token" {
		t.Errorf("parsed back: %+v", ch)
	}
	// The JSON body keeps the description as the host wrote it.
	d, _ := a.rpc(t).Error.AuthRequired()
	if got := d.Challenges[0].ErrorDescription; got != `The access token's issuer "ev\"il\\\né" is not trusted` {
		t.Errorf("body description %q", got)
	}
}

func TestHTTPRequestShape(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{MaxMessageSize: 1024}).HTTPHandler()

	// Without a token, every method but OPTIONS gets 401 and the
	// challenge (no 405 first); with one, GET, HEAD and the like get 405.
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodPut} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, "/mcp", nil)
		r.Header.Set("Content-Type", "application/json") // else PUT is 415 first
		h.ServeHTTP(w, r)
		ch, ok := wire.BearerChallenge(w.Header().Values("WWW-Authenticate"))
		if w.Code != http.StatusUnauthorized || !ok || ch.Param("resource_metadata") != testMetadataURL {
			t.Errorf("%s /mcp without a token: %d WWW-Authenticate %q", method, w.Code, w.Header().Get("WWW-Authenticate"))
		}
		w = httptest.NewRecorder()
		r.Header.Set("Authorization", "Bearer t-alice")
		h.ServeHTTP(w, r)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
			t.Errorf("%s /mcp with a token: %d Allow %q", method, w.Code, w.Header().Get("Allow"))
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodOptions, "/mcp", nil))
	if w.Code == http.StatusUnauthorized {
		t.Errorf("OPTIONS /mcp (a CORS preflight, never with credentials): 401")
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/elsewhere", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("POST /elsewhere: %d", w.Code)
	}

	big := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":"` + strings.Repeat("a", 1024) + `"}}`
	for _, tc := range []struct {
		name   string
		body   string
		header map[string][]string
		status int
		code   int
	}{
		{"body over the limit", big, bearer("t-alice"), 413, wire.CodeInvalidRequest},
		{"not JSON", "{", bearer("t-alice"), 400, wire.CodeParseError},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, bearer("t-alice"), 400, wire.CodeInvalidRequest},
		{"text/plain", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string][]string{"Content-Type": {"text/plain"}, "Authorization": {"Bearer t-alice"}}, 415, wire.CodeInvalidRequest},
		{"a form without a token", `a=b`, map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}, "Authorization": {"Bearer t-alice"}}, 415, wire.CodeInvalidRequest},
		{"unknown MCP-Protocol-Version", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string][]string{"Authorization": {"Bearer t-alice"}, "Mcp-Protocol-Version": {"1999-01-01"}}, 400, mcpserver.CodeUnsupportedProtocolVersion},
	} {
		a := post(t, h, "/mcp", tc.body, tc.header)
		if a.status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, a.status, tc.status, a.body)
			continue
		}
		if m := a.rpc(t); m.Error == nil || m.Error.Code != tc.code {
			t.Errorf("%s: body %s, want error %d", tc.name, a.body, tc.code)
		}
	}
	// A body over the limit from a client without a token is not read: 401.
	if a := post(t, h, "/mcp", big, nil); a.status != 401 {
		t.Errorf("unauthenticated big body: %d", a.status)
	}
}

func TestHTTPMCPMethods(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{Version: "1.2.3", ConformanceFixtures: true}).HTTPHandler()
	call := func(method, params string) (httpAnswer, *wire.Message) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":"r1","method":"` + method + `"`
		if params != "" {
			body += `,"params":` + params
		}
		a := post(t, h, "/mcp", body+"}", bearer("t-alice"))
		if a.status != 200 || a.header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s %s", method, a.status, a.header.Get("Content-Type"), a.body)
		}
		m := a.rpc(t)
		if m.ID.String() != `"r1"` {
			t.Errorf("%s answered id %s", method, m.ID)
		}
		return a, m
	}
	for requested, want := range map[string]string{"2025-06-18": "2025-06-18", "2025-03-26": "2025-03-26", "2025-11-25": "2025-11-25", "2024-11-05": "2025-11-25"} {
		_, m := call("initialize", `{"protocolVersion":"`+requested+`","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
		var res struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage `json:"capabilities"`
			ServerInfo      wire.MCPImplementation     `json:"serverInfo"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil || res.ProtocolVersion != want || res.Capabilities["tools"] == nil ||
			res.ServerInfo != (wire.MCPImplementation{Name: "agentauth", Version: "1.2.3"}) {
			t.Errorf("initialize %s: %s", requested, m.Result)
		}
	}
	// The agent host dialects still work on this face.
	if _, m := call("initialize", `{"protocolVersion":1}`); !strings.Contains(string(m.Result), `"resourceMetadata"`) {
		t.Errorf("design initialize: %s", m.Result)
	}
	a := post(t, h, "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, bearer("t-alice"))
	if a.status != http.StatusAccepted || a.body != "" {
		t.Errorf("notifications/initialized: %d %q", a.status, a.body)
	}
	if _, m := call("ping", ""); string(m.Result) != "{}" {
		t.Errorf("ping: %s", m.Result)
	}
	_, m := call("tools/list", `{}`)
	var list struct{ Tools []mcpserver.Tool }
	if err := json.Unmarshal(m.Result, &list); err != nil || len(list.Tools) != 4 || list.Tools[0].Name != mcpserver.ToolWhoami || list.Tools[0].Annotations["readOnlyHint"] != true {
		t.Errorf("tools/list: %s", m.Result)
	}
	if strings.Contains(string(m.Result), mcpserver.ToolSampling) || strings.Contains(string(m.Result), "resultType") {
		t.Errorf("tools/list before 2026-07-28 lists a tool needing input requests, or a 2026-07-28 field: %s", m.Result)
	}
	_, m = call("tools/call", `{"name":"whoami","arguments":{}}`)
	var res struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) != 1 || res.Content[0].Type != "text" || res.IsError ||
		res.Content[0].Text != `{"schemes":[{"schemeId":"dev","subject":"alice","scopes":["agent:use"]}]}` {
		t.Errorf("tools/call whoami: %s", m.Result)
	}
	for _, params := range []string{`{"name":"rm -rf"}`, `{"name":"whoami","arguments":{"x":1}}`, `[]`} {
		if _, m := call("tools/call", params); m.Error == nil || m.Error.Code != wire.CodeInvalidParams {
			t.Errorf("tools/call %s: %+v", params, m.Error)
		}
	}
	if _, m := call("whoami", ""); !strings.Contains(string(m.Result), `"subject":"alice"`) {
		t.Errorf("whoami: %s", m.Result)
	}
	if _, m := call("authenticate", `{"schemeId":"dev","token":"t-bob"}`); m.Error == nil || m.Error.Code != wire.CodeMethodNotFound {
		t.Errorf("authenticate: %+v", m.Error)
	}
	if _, m := call("resources/list", `{}`); !strings.Contains(string(m.Result), `"uri":"test://static-text"`) {
		t.Errorf("resources/list: %s", m.Result)
	}
	if _, m := call("resources/read", `{"uri":"test://nothing"}`); m.Error == nil || m.Error.Code != mcpserver.CodeResourceNotFoundLegacy {
		t.Errorf("resources/read of an unknown URI: %+v", m.Error)
	}
	if _, m := call("prompts/get", `{"name":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}}`); !strings.Contains(string(m.Result), `arg1='a', arg2='b'`) {
		t.Errorf("prompts/get: %s", m.Result)
	}
	if _, m := call("server/discover", `{}`); m.Error == nil || m.Error.Code != wire.CodeMethodNotFound {
		t.Errorf("server/discover without MCP 2026-07-28: %+v", m.Error)
	}
}

// TestHTTPMCPWithoutFixtures: serve's /mcp as users get it (no
// --conformance-fixtures): the host's own tools and no conformance suite
// fixture anywhere: not listed, not callable, no resources or prompts, and
// neither declared in the capabilities.
func TestHTTPMCPWithoutFixtures(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{}).HTTPHandler()
	call := func(method, params string) *wire.Message {
		t.Helper()
		a := post(t, h, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`, bearer("t-alice"))
		if a.status != 200 {
			t.Fatalf("%s: %d %s", method, a.status, a.body)
		}
		return a.rpc(t)
	}
	m := call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
	var init struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(m.Result, &init); err != nil || init.Capabilities["tools"] == nil || init.Capabilities["resources"] != nil || init.Capabilities["prompts"] != nil {
		t.Errorf("initialize capabilities: %s", m.Result)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(call("tools/list", `{}`).Result, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "whoami") || !slices.Contains(names, "echo") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "test_") }) {
		t.Errorf("tools/list: %v", names)
	}
	if m := call("tools/call", `{"name":"test_simple_text","arguments":{}}`); m.Error == nil || m.Error.Code != wire.CodeInvalidParams || !strings.HasSuffix(m.Error.Message, "unknown tool 'test_simple_text' (this server has: whoami, echo)") {
		t.Errorf("tools/call of a fixture: %+v", m.Error)
	}
	if m := call("resources/list", `{}`); string(m.Result) != `{"resources":[]}` {
		t.Errorf("resources/list: %s", m.Result)
	}
	if m := call("resources/read", `{"uri":"test://static-text"}`); m.Error == nil || m.Error.Code != mcpserver.CodeResourceNotFoundLegacy {
		t.Errorf("resources/read of the fixture: %+v", m.Error)
	}
	if m := call("prompts/list", `{}`); string(m.Result) != `{"prompts":[]}` {
		t.Errorf("prompts/list: %s", m.Result)
	}
	if m := call("prompts/get", `{"name":"test_simple_prompt"}`); m.Error == nil || m.Error.Code != wire.CodeInvalidParams {
		t.Errorf("prompts/get of the fixture: %+v", m.Error)
	}
}

// tools/call goes through the same gate as the method: a missing scope is 403.
func TestHTTPToolCallNeedsTheMethodScopes(t *testing.T) {
	config := strings.Replace(baseConfig, `"disposeSession"`, `"whoami"`, 1)
	h := newTestHost(t, config, Options{}).HTTPHandler()
	a := post(t, h, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`, bearer("t-alice"))
	if ch, _ := wire.BearerChallenge(a.header.Values("WWW-Authenticate")); a.status != 403 || ch.Param("scope") != "agent:admin" {
		t.Errorf("%d %q", a.status, a.header.Values("WWW-Authenticate"))
	}
	if a := post(t, h, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`, bearer("t-admin")); a.status != 200 {
		t.Errorf("admin: %d %s", a.status, a.body)
	}
}

// The HTTP face validates through the grant cache: repeated requests cost
// one validation, and a revocation is refused at once.
func TestHTTPCacheAndRevocation(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	inner := &tokenfake.CountingValidator[Grant]{Grant: &Grant{Subject: "carol", JTI: "j-carol", Expiry: time.Now().Add(time.Hour)}}
	h.r().schemes[0].checker = resource.NewChecker("dev", inner, 0, h.now, nil)
	face := h.HTTPHandler()
	for range 5 {
		if a := post(t, face, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"whoami"}`, bearer("t-carol")); a.status != 200 || !strings.Contains(a.body, "carol") {
			t.Fatalf("%d %s", a.status, a.body)
		}
	}
	if n := inner.Calls.Load(); n != 1 {
		t.Errorf("validated %d times for 5 requests, want 1", n)
	}
	h.NotifyRevoked(time.Time{}, "j-carol")
	a := post(t, face, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"whoami"}`, bearer("t-carol"))
	if ch, _ := wire.BearerChallenge(a.header.Values("WWW-Authenticate")); a.status != 401 || ch.Param("error_description") != "The access token was revoked" {
		t.Errorf("after revocation: %d %q", a.status, a.header.Values("WWW-Authenticate"))
	}
}

// An MCP client (wire.HTTPSession, MCP Streamable HTTP) connects, lists
// and calls over real HTTP.
func TestHTTPWithAnMCPClient(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{ConformanceFixtures: true})
	mux := http.NewServeMux()
	mux.Handle("/", h.HTTPHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	anon, err := wire.NewHTTPSession(srv.URL+"/mcp", srv.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = anon.Initialize(ctx, "test", "0")
	if ae, ok := err.(*wire.HTTPAuthError); !ok || ae.StatusCode != 401 || ae.Challenge.Param("resource_metadata") != testMetadataURL {
		t.Fatalf("without a token: %v", err)
	}

	s, err := wire.NewHTTPSession(srv.URL+"/mcp", srv.Client(), func(context.Context) (string, error) { return "t-alice", nil })
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Initialize(ctx, "test", "0")
	if err != nil || res.ProtocolVersion != wire.MCPStatelessVersion || res.ServerInfo.Name != "agentauth" {
		t.Fatalf("initialize: %+v %v", res, err)
	}
	var tools struct{ Tools []struct{ Name string } }
	if err := s.Call(ctx, "tools/list", nil, &tools); err != nil || len(tools.Tools) != 7 || tools.Tools[0].Name != "whoami" {
		t.Fatalf("tools/list: %+v %v", tools, err)
	}
	var out struct{ Content []struct{ Text string } }
	if err := s.Call(ctx, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, &out); err != nil ||
		len(out.Content) != 1 || !strings.Contains(out.Content[0].Text, `"subject":"alice"`) {
		t.Fatalf("tools/call: %+v %v", out, err)
	}
	if err := s.Close(ctx); err != nil {
		t.Error(err)
	}

	// The metadata is served cross-origin, and /mcp answers a preflight.
	resp, err := srv.Client().Get(srv.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("metadata CORS: %v", resp.Header)
	}
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/mcp", nil)
	req.Header.Set("Origin", "http://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}
