package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/wire"
)

// specExamples are the MCP specification's URL elicitation examples
// (testdata/url_elicitation_spec.txtar says where each comes from).
func specExamples(t *testing.T) map[string][]byte {
	t.Helper()
	a, err := txtar.ParseFile("testdata/url_elicitation_spec.txtar")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range a.Files {
		out[f.Name] = f.Data
	}
	return out
}

// elicitFake is an MCP server whose tools/call needs a sign-in at a URL
// of its own, answered with the specification's example (MCP 2025-11-25
// -32042, or with stateless a 2026-07-28 input_required result). Visiting
// the URL signs the user in; /auth-status says whether they are.
type elicitFake struct {
	elicitConfig
	srv      *httptest.Server
	examples map[string][]byte

	mu         sync.Mutex
	signedIn   bool
	calls      []map[string]json.RawMessage // tools/call params
	caps       []string                     // client capabilities per request
	statusAuth []string                     // Authorization at /auth-status
}

// elicitConfig is how the fake asks.
type elicitConfig struct {
	// stateless answers server/discover (MCP 2026-07-28).
	stateless bool
	// meta adds agentauth's _meta (upstream, authStatus) to the ask;
	// authStatus overrides its status URL.
	meta       bool
	authStatus string
	// url replaces the example's URL; askAlways asks even when signed in.
	url       string
	askAlways bool
}

func newElicitFake(t *testing.T, cfg elicitConfig) *elicitFake {
	f := &elicitFake{elicitConfig: cfg, examples: specExamples(t)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", f.serveMCP)
	visit := func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.signedIn = true
		f.mu.Unlock()
		io.WriteString(w, "signed in")
	}
	mux.HandleFunc("GET /connect", visit)
	mux.HandleFunc("GET /ui/set_api_key", visit)
	mux.HandleFunc("GET /auth-status", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.statusAuth = append(f.statusAuth, r.Header.Get("Authorization"))
		oauthfake.WriteJSON(w, http.StatusOK, map[string]any{"session": "s1", "upstream": "example", "authenticated": f.signedIn, "expiresAt": nil})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *elicitFake) serveMCP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m, err := wire.Decode(body)
	if err != nil {
		http.Error(w, "bad message", http.StatusBadRequest)
		return
	}
	var params map[string]json.RawMessage
	_ = json.Unmarshal(m.Params, &params)
	f.mu.Lock()
	defer f.mu.Unlock()
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(params["_meta"], &meta)
	if c, ok := meta["io.modelcontextprotocol/clientCapabilities"]; ok {
		f.caps = append(f.caps, string(c))
	}
	reply := func(v any) {
		resp, _ := wire.NewResult(m.ID, v)
		b, _ := wire.Encode(resp)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
	switch m.Method {
	case "server/discover":
		if !f.stateless {
			w.Header().Set("Content-Type", "application/json")
			b, _ := wire.Encode(wire.NewErrorResponse(m.ID, wire.Errorf(wire.CodeMethodNotFound, "method not found")))
			w.Write(b)
			return
		}
		reply(map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}}})
	case "initialize":
		f.caps = append(f.caps, string(params["capabilities"]))
		reply(map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]string{"name": "fake", "version": "0"}})
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/call":
		f.calls = append(f.calls, params)
		_, answered := params["inputResponses"]
		if f.signedIn && !f.askAlways && (!f.stateless || answered) {
			reply(map[string]any{"content": []map[string]string{{"type": "text", "text": "your files"}}, "isError": false})
			return
		}
		f.writeAsk(w, m.ID)
	default:
		reply(map[string]any{})
	}
}

// writeAsk answers with the specification's example, its id and host
// replaced, with agentauth's _meta when meta is set.
func (f *elicitFake) writeAsk(w http.ResponseWriter, id wire.ID) {
	name := "mcp-2025-11-25/url-elicitation-required.json"
	if f.stateless {
		name = "mcp-2026-07-28/input-required.json"
	}
	var ex map[string]any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(f.examples[name]), "https://mcp.example.com", f.srv.URL)), &ex); err != nil {
		panic(err)
	}
	var el map[string]any
	if f.stateless {
		el = ex["result"].(map[string]any)["inputRequests"].(map[string]any)["github_login"].(map[string]any)["params"].(map[string]any)
	} else {
		el = ex["error"].(map[string]any)["data"].(map[string]any)["elicitations"].([]any)[0].(map[string]any)
	}
	if f.url != "" {
		el["url"] = f.url
	}
	if f.meta {
		status := f.authStatus
		if status == "" {
			status = f.srv.URL + "/auth-status?upstream=example"
		}
		el["_meta"] = map[string]any{wire.MetaUpstream: map[string]string{"id": "example", "label": "Example Co", "host": "as.example.com"},
			wire.MetaAuthStatus: status}
	}
	ex["id"] = id
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ex)
}

func TestCallMCPFollowsURLElicitation(t *testing.T) {
	const urlCaps = `{"elicitation":{"url":{}}}`
	tests := []struct {
		name    string
		fake    elicitConfig
		opts    SignInOptions
		browser func(string) error
		// wantCalls is how many tools/call the server received.
		wantCalls  int
		wantStatus []string
		wantReason string
		wantErr    string
		wantLines  []string
	}{
		{name: "2025-11-25 -32042 with agentauth's _meta: open, poll, retry", fake: elicitConfig{meta: true},
			wantCalls: 2, wantStatus: []string{"Bearer tok-1"},
			wantLines: []string{"Sign in to Example Co (as.example.com) to continue:", "URL/connect?elicitationId=550e8400-e29b-41d4-a716-446655440000",
				"Signed in to Example Co; sending tools/call again."}},
		{name: "2026-07-28 input_required: answer accept, echo requestState", fake: elicitConfig{stateless: true, meta: true},
			wantCalls: 2, wantStatus: []string{"Bearer tok-1"},
			wantLines: []string{"Sign in to Example Co (as.example.com) to continue:", "URL/ui/set_api_key", "Signed in to Example Co; sending tools/call again."}},
		{name: "the specification's example alone names no way to learn the completion: exit 4 after opening",
			fake: elicitConfig{}, wantCalls: 1, wantReason: "offers no way to learn when it completes",
			wantLines: []string{"Sign in to the upstream service to continue:", "URL/connect?elicitationId=550e8400-e29b-41d4-a716-446655440000"}},
		{name: "asked again after the sign-in: stop", fake: elicitConfig{meta: true, askAlways: true},
			wantCalls: 2, wantStatus: []string{"Bearer tok-1"}, wantReason: "still asks for it after the sign-in"},
		{name: "--no-wait: the URL only, no browser, no poll", fake: elicitConfig{meta: true}, opts: SignInOptions{NoWait: true},
			browser:   func(string) error { t.Error("the browser was opened"); return nil },
			wantCalls: 1, wantReason: "open the URL above, sign in, then run the command again"},
		{name: "the user never signs in: timeout", fake: elicitConfig{meta: true}, opts: SignInOptions{WaitTimeout: 100 * time.Millisecond},
			browser: func(string) error { return nil }, wantCalls: 1, wantStatus: []string{"Bearer tok-1"},
			wantReason: "did not complete within 100ms"},
		{name: "a browser that fails: the user is told to open the URL", fake: elicitConfig{meta: true}, opts: SignInOptions{WaitTimeout: 100 * time.Millisecond},
			browser: func(string) error {
				return errors.New("cannot use $BROWSER: exit status 1; log in with --device instead")
			},
			wantCalls: 1, wantStatus: []string{"Bearer tok-1"}, wantReason: "did not complete within 100ms",
			wantLines: []string{"warning: Cannot open a browser: open the URL above yourself."}},
		{name: "a status URL on another origin gets no token", fake: elicitConfig{meta: true, authStatus: "http://127.0.0.2:9/auth-status"},
			wantCalls: 1, wantReason: "offers no way to learn when it completes"},
		{name: "a URL that is not http(s) is neither shown nor opened", fake: elicitConfig{meta: true, url: "javascript:alert(1)"},
			browser:   func(string) error { t.Error("the browser was opened"); return nil },
			wantCalls: 1, wantErr: `the sign-in URL "javascript:alert(1)" is not an absolute http(s) URL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newElicitFake(t, tt.fake)
			cl, _, ui := newTestClient(t)
			if tt.browser != nil {
				cl.Browser = tt.browser
			}
			params := json.RawMessage(`{"name":"files","arguments":{"dir":"/"}}`)
			raw, err := cl.CallMCP(context.Background(), MCPCall{Target: f.srv.URL + "/mcp", Method: "tools/call", Params: params, Token: "tok-1", SignIn: tt.opts})
			var sir *SignInRequiredError
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			case tt.wantReason != "":
				if !errors.As(err, &sir) || !errors.As(err, new(*AuthError)) || !strings.Contains(sir.Reason, tt.wantReason) {
					t.Fatalf("err = %v, want an *AuthError with a *SignInRequiredError saying %q", err, tt.wantReason)
				}
				if sir.Method != "tools/call" || !strings.HasPrefix(sir.Ask.URL, f.srv.URL) {
					t.Errorf("ask = %+v for %s", sir.Ask, sir.Method)
				}
			case err != nil:
				t.Fatal(err)
			case !strings.Contains(string(raw), "your files"):
				t.Errorf("result = %s", raw)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.calls) != tt.wantCalls {
				t.Fatalf("tools/call sent %d times, want %d", len(f.calls), tt.wantCalls)
			}
			if diff := cmp.Diff(tt.wantStatus, f.statusAuth); diff != "" {
				t.Errorf("/auth-status Authorization (-want +got):\n%s", diff)
			}
			for _, c := range f.caps {
				if c != urlCaps {
					t.Errorf("client capabilities = %s, want %s", c, urlCaps)
				}
			}
			if len(f.caps) == 0 {
				t.Error("no client capabilities declared")
			}
			if tt.wantCalls == 2 {
				first, retry := f.calls[0], f.calls[1]
				for _, k := range []string{"name", "arguments"} {
					if string(first[k]) != string(retry[k]) {
						t.Errorf("the retry's %s = %s, want %s", k, retry[k], first[k])
					}
				}
				if tt.fake.stateless {
					accept := strings.Join(strings.Fields(string(f.examples["mcp-2026-07-28/accept.json"])), "")
					if got := string(retry["inputResponses"]); got != `{"github_login":`+accept+`}` {
						t.Errorf("inputResponses = %s, want the example's accept under github_login", got)
					}
					if got := string(retry["requestState"]); got != `"AEAD-protected blob"` {
						t.Errorf("requestState = %s, want the example's, echoed", got)
					}
				} else if _, ok := retry["inputResponses"]; ok {
					t.Error("a 2025-11-25 retry carries inputResponses")
				}
			}
			var lines []string
			for _, l := range ui.lines {
				lines = append(lines, strings.ReplaceAll(l, f.srv.URL, "URL"))
			}
			for _, want := range tt.wantLines {
				if !contains(lines, want) {
					t.Errorf("UI lines %q lack %q", lines, want)
				}
			}
			for _, l := range lines {
				if strings.Contains(l, "tok-1") {
					t.Errorf("the token was shown: %q", l)
				}
			}
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// TestCallREST calls a plain HTTP tool whose first answer is the 401
// authentication_required body (issue 15 contract, seed 004's agent).
func TestCallREST(t *testing.T) {
	var mu sync.Mutex
	signedIn, posts := false, 0
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/rally_whoami", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		posts++
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Header.Get("Authorization") != "Bearer tok-1":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp", scope="agent:use"`)
			oauthfake.WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
		case string(body) != `{"project":"p1"}`:
			oauthfake.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad body " + string(body)})
		case !signedIn:
			oauthfake.WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": "authentication_required",
				"auth_url": srv.URL + "/auth/start?id=e1", "elicitation_id": "e1",
				"upstream": map[string]string{"id": "rally", "label": "Rally", "host": "rally1.rallydev.com"}, "session": "s1",
				"auth_status":  srv.URL + "/auth-status?session=s1&upstream=rally",
				"instructions": []string{"Open auth_url in a browser and sign in to Rally", "Poll auth_status until authenticated is true", "Retry this request"}})
		default:
			oauthfake.WriteJSON(w, http.StatusOK, map[string]string{"user": "carol"})
		}
	})
	mux.HandleFunc("GET /auth/start", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		signedIn = true
		mu.Unlock()
	})
	mux.HandleFunc("GET /auth-status", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		oauthfake.WriteJSON(w, http.StatusOK, map[string]any{"session": "s1", "upstream": "rally", "authenticated": signedIn && r.Header.Get("Authorization") == "Bearer tok-1"})
	})
	srv = httptest.NewServer(mux)
	defer srv.Close()

	cl, _, ui := newTestClient(t)
	raw, err := cl.CallREST(context.Background(), RESTCall{Target: srv.URL, Tool: "rally_whoami", Args: json.RawMessage(`{"project":"p1"}`), Token: "tok-1"})
	if err != nil || string(raw) != `{"user":"carol"}` {
		t.Fatalf("CallREST = %s, %v", raw, err)
	}
	if posts != 2 || !contains(ui.lines, "Sign in to Rally (rally1.rallydev.com) to continue:") || !contains(ui.lines, srv.URL+"/auth/start?id=e1") {
		t.Errorf("posts = %d, UI = %q", posts, ui.lines)
	}

	// Without a token: the RFC 6750 refusal is exit 4 with the login to
	// run, of the resource its resource_metadata names.
	_, err = cl.CallREST(context.Background(), RESTCall{Target: srv.URL, Tool: "rally_whoami", Token: "other"})
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Hint != "agentauth login "+srv.URL+"/mcp" || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("err = %v (%#v)", err, ae)
	}
}

// TestHostSignInAsk reads serve's upstream fields out of -32007 and
// -32000, and the pushes that end the wait.
func TestHostSignInAsk(t *testing.T) {
	data := `{"challenges":[],"upstream":{"id":"rally","label":"Rally","host":"rally1.rallydev.com"},"url":"http://127.0.0.1:1/auth/start?id=e1",` +
		`"elicitationId":"e1","authStatus":"http://127.0.0.1:1/auth-status?upstream=rally","authMethods":["upstream:rally"]}`
	want := wire.SignInAsk{URL: "http://127.0.0.1:1/auth/start?id=e1", ElicitationID: "e1",
		Upstream: wire.Upstream{ID: "rally", Label: "Rally", Host: "rally1.rallydev.com"}, AuthStatus: "http://127.0.0.1:1/auth-status?upstream=rally"}
	for _, code := range []int{wire.CodeAuthRequired, wire.CodeACPAuthRequired} {
		ask, methods, ok := wire.HostSignInAsk(&wire.Error{Code: code, Data: json.RawMessage(data)})
		if !ok || !cmp.Equal(ask, want) || upstreamMethodID(ask, methods) != "upstream:rally" {
			t.Errorf("code %d: %+v %v %v", code, ask, methods, ok)
		}
	}
	for _, e := range []*wire.Error{
		{Code: wire.CodeAuthRequired, Data: json.RawMessage(`{"challenges":[{"schemeId":"dev","error":"invalid_token"}]}`)},
		{Code: wire.CodeInvalidParams, Data: json.RawMessage(data)},
	} {
		if _, _, ok := wire.HostSignInAsk(e); ok {
			t.Errorf("%s read as an ask", e.Data)
		}
	}

	pushes := []struct {
		method, params string
		want           bool
	}{
		{wire.MethodNotifyAuthRequired, `{"resource":"r","state":"authenticated","upstream":"rally"}`, true},
		{wire.MethodAuthRequired, `{"channel":"agenthost:/root","reason":"authenticated","upstream":"rally"}`, true},
		{wire.MethodNotifyAuthRequired, `{"resource":"r","state":"authenticated","upstream":{"id":"rally"}}`, true},
		{wire.MethodNotifyAuthRequired, `{"resource":"r","state":"authenticated","upstream":"github"}`, false},
		{wire.MethodNotifyAuthRequired, `{"resource":"r","state":"required","upstream":"rally"}`, false},
		{wire.MethodNotifyAuthRequired, `{"resource":"r","state":"authenticated"}`, false},
		{"notify/other", `{"state":"authenticated","upstream":"rally"}`, false},
	}
	for _, p := range pushes {
		if got := upstreamSignedIn(&wire.Message{Method: p.method, Params: json.RawMessage(p.params)}, "rally"); got != p.want {
			t.Errorf("%s %s: %v, want %v", p.method, p.params, got, p.want)
		}
	}
}

// TestCallMCPAnswersElicitationRequest: an MCP 2025-11-25 server asks for
// the URL elicitation within the tools/call stream (the specification's
// elicitation/create example); the client shows and opens it and answers
// with the example's response, then reads the tool's result. A form-mode
// request is refused with -32602: agentauth declares url mode only.
func TestCallMCPAnswersElicitationRequest(t *testing.T) {
	examples := specExamples(t)
	normal := func(b []byte) string {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(v)
		return string(out)
	}
	tests := []struct {
		name    string
		request string
		opts    SignInOptions
		// wantAnswer is the client's answer, normalized JSON.
		wantAnswer string
		wantOpened bool
	}{
		{name: "url mode: shown, opened, accepted", request: string(examples["mcp-2025-11-25/elicitation-create.json"]),
			wantAnswer: normal(examples["mcp-2025-11-25/elicitation-create-response.json"]), wantOpened: true},
		{name: "url mode with --no-wait: shown, cancelled", request: string(examples["mcp-2025-11-25/elicitation-create.json"]),
			opts: SignInOptions{NoWait: true}, wantAnswer: `{"id":3,"jsonrpc":"2.0","result":{"action":"cancel"}}`},
		{name: "form mode: -32602", request: `{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object"}}}`,
			wantAnswer: `{"error":{"code":-32602,"message":"invalid params: agentauth answers url-mode elicitations only (it declares elicitation.url)"},"id":3,"jsonrpc":"2.0"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// answers carries the client's answer from its POST to the
			// tools/call stream, which then sends the result.
			answers := make(chan []byte, 1)
			var got []byte
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				m, err := wire.Decode(body)
				if err != nil {
					http.Error(w, "bad message", http.StatusBadRequest)
					return
				}
				reply := func(v any) {
					resp, _ := wire.NewResult(m.ID, v)
					b, _ := wire.Encode(resp)
					w.Header().Set("Content-Type", "application/json")
					w.Write(b)
				}
				switch {
				case m.IsResponse():
					answers <- body
					w.WriteHeader(http.StatusAccepted)
				case m.Method == "server/discover":
					b, _ := wire.Encode(wire.NewErrorResponse(m.ID, wire.Errorf(wire.CodeMethodNotFound, "method not found")))
					w.Header().Set("Content-Type", "application/json")
					w.Write(b)
				case m.Method == "initialize":
					reply(map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "serverInfo": map[string]string{"name": "fake", "version": "0"}})
				case m.Method == "notifications/initialized":
					w.WriteHeader(http.StatusAccepted)
				case m.Method == "tools/call":
					w.Header().Set("Content-Type", "text/event-stream")
					req := strings.ReplaceAll(normal([]byte(tt.request)), "https://mcp.example.com", srv.URL)
					io.WriteString(w, "event: message\ndata: "+req+"\n\n")
					w.(http.Flusher).Flush()
					select {
					case got = <-answers:
					case <-r.Context().Done():
						return
					}
					resp, _ := wire.NewResult(m.ID, map[string]any{"content": []map[string]string{{"type": "text", "text": "done"}}})
					b, _ := wire.Encode(resp)
					io.WriteString(w, "event: message\ndata: "+string(b)+"\n\n")
				default:
					reply(map[string]any{})
				}
			}))
			defer srv.Close()
			cl, _, ui := newTestClient(t)
			opened := false
			cl.Browser = func(u string) error { opened = u == srv.URL+"/ui/set_api_key"; return nil }
			raw, err := cl.CallMCP(context.Background(), MCPCall{Target: srv.URL + "/mcp", Method: "tools/call", Params: json.RawMessage(`{"name":"t"}`), Token: "tok-1", SignIn: tt.opts})
			if err != nil || !strings.Contains(string(raw), "done") {
				t.Fatalf("CallMCP = %s, %v", raw, err)
			}
			if normal(got) != tt.wantAnswer {
				t.Errorf("answer = %s, want %s", normal(got), tt.wantAnswer)
			}
			if opened != tt.wantOpened {
				t.Errorf("opened = %v, want %v", opened, tt.wantOpened)
			}
			if tt.wantOpened && !contains(ui.lines, srv.URL+"/ui/set_api_key") {
				t.Errorf("UI lines %q lack the URL", ui.lines)
			}
		})
	}
}
