package commands

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentauth/agentauth/internal/oauthfake"
)

// restSignInFake is serve's plain HTTP face (its contract): POST
// /tools/rally_whoami answers 401 authentication_required until the
// browser visits /auth/start.
type restSignInFake struct {
	srv   *httptest.Server
	label string

	mu       sync.Mutex
	signedIn bool
	posts    int
}

func newRESTSignInFake(t *testing.T, label string) *restSignInFake {
	f := &restSignInFake{label: label}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/rally_whoami", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.posts++
		if !f.signedIn {
			oauthfake.WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": "authentication_required",
				"auth_url": f.srv.URL + "/auth/start?id=e1", "elicitation_id": "e1",
				"upstream": map[string]string{"id": "rally", "label": f.label, "host": "rally1.rallydev.com"}, "session": "s1",
				"auth_status":  f.srv.URL + "/auth-status?session=s1&upstream=rally",
				"instructions": []string{"Open auth_url in a browser and sign in to Rally", "Poll auth_status until authenticated is true", "Retry this request"}})
			return
		}
		oauthfake.WriteJSON(w, http.StatusOK, map[string]string{"user": "carol"})
	})
	mux.HandleFunc("GET /auth/start", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.signedIn = true
		f.mu.Unlock()
	})
	mux.HandleFunc("GET /auth-status", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		oauthfake.WriteJSON(w, http.StatusOK, map[string]any{"session": "s1", "upstream": "rally", "authenticated": f.signedIn && r.Header.Get("Authorization") == "Bearer tok-1"})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// TestCallSignIn runs call against an upstream ask: what it prints,
// whether it opens the URL, and its exit code.
func TestCallSignIn(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		label string
		// tty is a terminal on stdout (the system opener may run).
		tty      bool
		wantCode int
		// wantOut is stdout with the fake's URL replaced by URL.
		wantOut   string
		wantErr   []string
		wantPosts int
	}{
		{name: "on a terminal: opened, waited, sent again", tty: true, label: "Rally",
			wantOut: "{\n  \"user\": \"carol\"\n}\n", wantPosts: 2,
			wantErr: []string{`^Sign in to Rally \(rally1\.rallydev\.com\) to continue:$`, `^URL/auth/start\?id=e1$`,
				`^Signed in to Rally; sending rally_whoami again\.$`}},
		{name: "--no-wait --json: the ask on stdout, exit 4", args: []string{"--no-wait", "--json"}, tty: true, label: "Rally",
			wantCode: ExitAuth, wantPosts: 1,
			wantOut: `{"error":"sign_in_required","method":"rally_whoami","url":"URL/auth/start?id=e1","elicitationId":"e1",` +
				`"authStatus":"URL/auth-status?session=s1\u0026upstream=rally","upstream":{"id":"rally","label":"Rally","host":"rally1.rallydev.com"}}` + "\n",
			wantErr: []string{`^URL/auth/start\?id=e1$`,
				`^agentauth: rally_whoami needs a sign-in to Rally \(rally1\.rallydev\.com\): open the URL above, sign in, then run the command again$`}},
		{name: "no terminal, no $BROWSER: not opened; the wait times out", args: []string{"--wait-timeout", "200ms"}, label: "Rally",
			wantCode: ExitAuth, wantPosts: 1,
			wantErr: []string{`^URL/auth/start\?id=e1$`,
				`^agentauth: rally_whoami needs a sign-in to Rally \(rally1\.rallydev\.com\): the sign-in did not complete within 200ms; sign in at the URL above and run the command again \(or raise --wait-timeout\)$`}},
		{name: "the upstream's label cannot drive the terminal", args: []string{"--no-wait"}, label: "Ra\x1b[2Jlly\nFake line",
			wantCode: ExitAuth, wantPosts: 1,
			wantErr: []string{`^Sign in to Ra\[2JllyFake line \(rally1\.rallydev\.com\) to continue:$`,
				`^agentauth: rally_whoami needs a sign-in to Ra\[2JllyFake line \(rally1\.rallydev\.com\): open the URL above`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRESTSignInFake(t, tt.label)
			tf := newTestFactory(t, "tok-1\n")
			tf.IO.StdoutTTY = tt.tty
			args := append(append([]string{"call", "--rest", "--token-stdin"}, tt.args...), f.srv.URL, "rally_whoami")
			code := tf.run(args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, tt.wantCode, tf.errOut)
			}
			out := strings.ReplaceAll(tf.out.String(), f.srv.URL, "URL")
			if out != tt.wantOut {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tt.wantOut)
			}
			if strings.HasPrefix(tt.wantOut, `{"error"`) {
				var v map[string]any
				if err := json.Unmarshal(tf.out.Bytes(), &v); err != nil {
					t.Errorf("stdout is not one JSON document: %v", err)
				}
			}
			stderr := strings.ReplaceAll(tf.errOut.String(), f.srv.URL, "URL")
			for _, re := range tt.wantErr {
				if !regexp.MustCompile("(?m)" + re).MatchString(stderr) {
					t.Errorf("stderr lacks %s:\n%s", re, stderr)
				}
			}
			if strings.ContainsRune(stderr, '\x1b') || strings.Contains(stderr+out, "tok-1") {
				t.Errorf("stderr has an escape or the token:\n%q", stderr)
			}
			if f.posts != tt.wantPosts {
				t.Errorf("%d POSTs, want %d", f.posts, tt.wantPosts)
			}
		})
	}
}
