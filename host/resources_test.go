package host

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/internal/tokenfake"
	"github.com/agentauth/agentauth/wire"
)

// twoSchemesHost serves two jwt schemes of one issuer: "a" without a
// resource of its own (the host's, testResource) and "b" (derived:
// testResource/b). It returns the host and a token for each resource.
func twoSchemesHost(t *testing.T) (h *Host, tokA, tokB string) {
	t.Helper()
	ti := tokenfake.NewIssuer(t)
	k := tokenfake.NewKey(t, "k", jose.ES256)
	ti.Publish(k)
	config := `{"resource": "` + testResource + `", "schemes": [
	  {"id": "a", "authorizationServers": ["` + ti.URL + `"], "validation": {"type": "jwt"}},
	  {"id": "b", "authorizationServers": ["` + ti.URL + `"], "validation": {"type": "jwt"}}]}`
	h = newTestHost(t, config, Options{HTTPClient: ti.Client()})
	now := time.Now()
	ca, cb := tokenfake.Claims(ti.URL, testResource, now), tokenfake.Claims(ti.URL, testResource+"/b", now)
	ca["jti"], cb["jti"] = "jti-a", "jti-b"
	return h, k.Sign(t, ca, "at+jwt"), k.Sign(t, cb, "at+jwt")
}

// rawFrames sends JSON-RPC frames and reads the answers as generic JSON,
// not through agentauth's wire types.
type rawFrames struct {
	t    *testing.T
	conn wire.Conn
}

func (r rawFrames) send(frame string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pushWait)
	defer cancel()
	if err := r.conn.Write(ctx, []byte(frame)); err != nil {
		r.t.Fatal(err)
	}
}

func (r rawFrames) read() map[string]any {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pushWait)
	defer cancel()
	b, err := r.conn.Read(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		r.t.Fatalf("%v: %s", err, b)
	}
	return m
}

// call sends a request and returns its answer.
func (r rawFrames) call(frame string) map[string]any {
	r.t.Helper()
	r.send(frame)
	return r.read()
}

func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestTwoSchemesTwoResources: in the published dialect (raw frames, the
// shipped shapes), each scheme is a protected resource of its own; a token
// whose audience is scheme a's resource is refused for b's and the other
// way round; auth/required on revocation names the revoked token's
// resource. The design dialect and the HTTP face check the same
// audiences.
func TestTwoSchemesTwoResources(t *testing.T) {
	h, tokA, tokB := twoSchemesHost(t)
	resA, resB := testResource, testResource+"/b"
	r := rawFrames{t, pipeConn(t, h, 0)}

	init := r.call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersions":["0.9.0"],"clientId":"test","initialSubscriptions":["ahp-root://"]}}`)
	snaps, _ := init["result"].(map[string]any)["snapshots"].([]any)
	if len(snaps) != 1 {
		t.Fatalf("initialize = %v", init)
	}
	agents := snaps[0].(map[string]any)["state"].(map[string]any)["agents"].([]any)
	var got []string
	for _, p := range agents[0].(map[string]any)["protectedResources"].([]any) {
		got = append(got, p.(map[string]any)["resource"].(string))
	}
	if strings.Join(got, " ") != resA+" "+resB {
		t.Errorf("protectedResources = %v, want %s and %s", got, resA, resB)
	}

	for _, tc := range []struct {
		resource, token string
		code            float64
	}{
		{resB, tokA, wire.CodeAuthRequired},
		{resA, tokB, wire.CodeAuthRequired},
		{resA, tokA, 0},
		{resB, tokB, 0},
		{"https://other.example/mcp", tokA, wire.CodeAuthRequired}, // as VS Code's host answers
	} {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "authenticate",
			"params": map[string]string{"channel": "ahp-root://", "resource": tc.resource, "token": tc.token}})
		m := r.call(string(b))
		if c := errorCode(m); c != tc.code {
			t.Errorf("authenticate %s with the token for %s: %v, want code %v", tc.resource, map[string]string{tokA: resA, tokB: resB}[tc.token], m, tc.code)
		}
		if tc.code == 0 && !jsonEqual(m["result"], map[string]any{}) {
			t.Errorf("authenticate %s = %v, want {}", tc.resource, m)
		}
	}

	if t.Failed() {
		return // no grant for b: no push to wait for
	}
	h.NotifyRevoked(time.Time{}, "jti-b")
	push := r.read()
	p, _ := push["params"].(map[string]any)
	res, _ := p["resource"].(map[string]any)
	if push["method"] != wire.MethodAuthRequired || p["reason"] != "expired" || res["resource"] != resB {
		t.Errorf("push on revocation = %v, want auth/required expired for %s", push, resB)
	}

	// The design dialect: a schemeId with the other resource's token.
	d := initialized(t, h, wire.DialectDesign)
	if chs := challenges(t, authenticate(t, d, "b", tokA)); len(chs) != 1 || chs[0].Resource != resB {
		t.Errorf("design authenticate b with a's token: %+v", chs)
	}
	if err := authenticate(t, d, "a", tokA); err != nil {
		t.Errorf("design authenticate a: %v", err)
	}

	// The HTTP face (/mcp) takes the host's resource only.
	ctx := context.Background()
	if g, ch, err := h.ValidateBearer(ctx, tokA); err != nil || ch != nil || g.Scheme != "a" {
		t.Errorf("HTTP face, a's token: %+v %+v %v", g, ch, err)
	}
	if g, ch, _ := h.ValidateBearer(ctx, tokB); g != nil || ch == nil {
		t.Errorf("HTTP face accepted b's token (audience %s)", resB)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestSchemeMetadataHandler: each scheme's own resource has its RFC 9728
// document at its path-aware well-known address (§3.1); the host's own
// address is left to the HTTP face.
func TestSchemeMetadataHandler(t *testing.T) {
	h, _, _ := twoSchemesHost(t)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	srv := httptest.NewServer(h.SchemeMetadataHandler(next))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/.well-known/oauth-protected-resource/mcp/b")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var md wire.ProtectedResourceMetadata
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	if md.Resource != testResource+"/b" || md.SchemeID != "b" {
		t.Errorf("metadata = %+v", md)
	}
	if got := h.ProtectedResourceMetadata().Resource; got != testResource {
		t.Errorf("the host's own document names %s", got)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource/mcp/c"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTeapot {
			t.Errorf("%s: status %d, want it passed on", p, resp.StatusCode)
		}
	}
}

// TestSchemeResources: the default rule (one scheme keeps the host's
// resource; with several, schemes[0] keeps it and the others get
// RESOURCE/ID), explicit resources, and the refusals, each naming the key.
func TestSchemeResources(t *testing.T) {
	static := func(id, extra string) string {
		return `{"id": "` + id + `"` + extra + `, "validation": {"type": "static", "tokens": [{"token": "t-` + id + `", "subject": "s"}]}}`
	}
	for _, tc := range []struct {
		name, config string
		want         []string
		err          string
	}{
		{"one scheme", `{"schemes": [` + static("dev", "") + `]}`, []string{testResource}, ""},
		{"two schemes", `{"schemes": [` + static("dev", "") + `,` + static("docs", "") + `]}`, []string{testResource, testResource + "/docs"}, ""},
		{"explicit", `{"schemes": [` + static("dev", "") + `,` + static("docs", `, "resource": "https://docs.example/api"`) + `]}`,
			[]string{testResource, "https://docs.example/api"}, ""},
		{"explicit host resource on another scheme", `{"schemes": [` + static("dev", `, "resource": "https://dev.example"`) + `,` + static("docs", `, "resource": "`+testResource+`"`) + `]}`,
			[]string{"https://dev.example", testResource}, ""},
		{"plain http", `{"schemes": [` + static("dev", `, "resource": "http://docs.example/api"`) + `]}`, nil, `schemes[0].resource: "http://docs.example/api" must use https`},
		{"fragment", `{"schemes": [` + static("dev", "") + `,` + static("docs", `, "resource": "https://docs.example/api#x"`) + `]}`, nil, `schemes[1].resource: "https://docs.example/api#x" must not have a fragment`},
		{"duplicate", `{"schemes": [` + static("dev", "") + `,` + static("docs", `, "resource": "`+testResource+`"`) + `]}`, nil, `schemes[1].resource: ` + testResource + ` is already schemes[0]'s (dev)`},
		{"none for /mcp", `{"schemes": [` + static("dev", `, "resource": "https://dev.example"`) + `]}`, nil, "schemes: none has the host's resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.config))
			if err == nil {
				c.Resolve("http://127.0.0.1:7777")
				var h *Host
				if h, err = New(Options{Config: c}); err == nil {
					h.Close()
				}
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range c.Schemes {
				got = append(got, s.Resource)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("resources = %v, want %v", got, tc.want)
			}
		})
	}
}
