package commands

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/agentauth/agentauth/client"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

func TestLoginFlags(t *testing.T) {
	t.Setenv(client.EnvGitHubClientID, "") // the developer's own must not change the defaults
	checkFlags(t, []flagCase[LoginOptions]{
		{name: "defaults", args: []string{"ws://h"},
			want: LoginOptions{Target: "ws://h", LoginChoices: LoginChoices{CallbackHost: "127.0.0.1"}, Timeout: 5 * time.Minute}},
		{name: "every flag",
			args: []string{"--device", "--scheme", "dev", "--scope", "a", "--scope", "b c", "--client-id", "cid", "--client-secret-stdin",
				"--client-metadata-url", "https://app.example/client.json", "--no-resource", "--callback-host", "localhost",
				"--no-browser", "--timeout", "90s", "--json", "https://mcp.example/mcp"},
			want: LoginOptions{Target: "https://mcp.example/mcp", SchemeID: "dev", LoginChoices: LoginChoices{Device: true, Scopes: []string{"a", "b c"},
				ClientID: "cid", ClientSecretStdin: true, ClientMetadataURL: "https://app.example/client.json",
				CallbackHost: "localhost", NoBrowser: true}, NoResource: true, Timeout: 90 * time.Second, JSON: true}},
		{name: "callback port", args: []string{"--callback-port", "8765", "ws://h"},
			want: LoginOptions{Target: "ws://h", LoginChoices: LoginChoices{CallbackHost: "127.0.0.1", CallbackPort: 8765}, Timeout: 5 * time.Minute}},
		{name: "no target", args: nil, wantCode: ExitUsage, wantErr: "login expects TARGET"},
		{name: "two targets", args: []string{"ws://a", "ws://b"}, wantCode: ExitUsage, wantErr: "login expects TARGET"},
		{name: "javascript: target", args: []string{"javascript:alert(1)"}, wantCode: ExitUsage, wantErr: `unsupported target "javascript:alert(1)"`},
		{name: "secret without client", args: []string{"--client-secret-stdin", "ws://h"}, wantCode: ExitUsage, wantErr: "--client-secret-stdin needs --client-id"},
		{name: "empty client id", args: []string{"--client-id", "", "ws://h"}, wantCode: ExitUsage, wantErr: "--client-id must not be empty"},
		{name: "bad callback host", args: []string{"--callback-host", "0.0.0.0", "ws://h"}, wantCode: ExitUsage, wantErr: "--callback-host must be 127.0.0.1 or localhost"},
		{name: "bad callback port", args: []string{"--callback-port", "70000", "ws://h"}, wantCode: ExitUsage, wantErr: "--callback-port must be between"},
		{name: "device with port", args: []string{"--device", "--callback-port", "8765", "ws://h"}, wantCode: ExitUsage, wantErr: "--callback-port does not apply to --device"},
		{name: "http client metadata", args: []string{"--client-metadata-url", "http://app.example/c.json", "ws://h"}, wantCode: ExitUsage, wantErr: "must be an https URL with a path"},
		{name: "client metadata without path", args: []string{"--client-metadata-url", "https://app.example", "ws://h"}, wantCode: ExitUsage, wantErr: "must be an https URL with a path"},
		{name: "empty scope", args: []string{"--scope", " ", "ws://h"}, wantCode: ExitUsage, wantErr: "--scope must not be empty"},
		{name: "zero timeout", args: []string{"--timeout", "0s", "ws://h"}, wantCode: ExitUsage, wantErr: "--timeout must be positive"},
	}, loginCommandWith, func(f *Factory, o *LoginOptions) bool {
		ok := o.IO == f.IO && o.Factory == f
		o.IO, o.Factory = nil, nil
		return ok
	}, cmpopts.IgnoreUnexported(LoginChoices{}))
}

func TestLogin(t *testing.T) {
	const cimdURL = "https://app.example/agentauth.json"
	tests := []struct {
		name  string
		args  []string
		stdin string
		// setup tunes the fake and the factory before the run.
		setup    func(t *testing.T, as *oauthfake.Server, tf *testFactory)
		wantCode int
		// wantErr are regexps over stderr.
		wantErr []string
		// check looks at what the fake saw and what was stored.
		check func(t *testing.T, as *oauthfake.Server, tf *testFactory)
	}{
		{
			name: "dynamic registration, PKCE, resource, scopes_supported",
			wantErr: []string{`^Opening http://127\.0\.0\.1:\d+/authorize\?\S+ in your browser\.$`,
				`^✓ Logged in to http://127\.0\.0\.1:\d+/mcp as alice \(agent:use, expires in 59m\)$`},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				q := as.AuthorizeQuery[0]
				if q.Get("resource") != as.Resource() || q.Get("scope") != "agent:use" || q.Get("code_challenge_method") != "S256" ||
					q.Get("client_id") != "dcr-1" || !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/callback$`).MatchString(q.Get("redirect_uri")) {
					t.Errorf("authorize query = %v", q)
				}
				if tok := as.FormsWith(wire.GrantAuthorizationCode); len(tok) != 1 || tok[0].Get("resource") != as.Resource() {
					t.Errorf("token requests = %v", tok)
				}
				// One registration serves both flows when the server has a device endpoint.
				if want := []string{wire.GrantAuthorizationCode, wire.GrantRefreshToken, wire.GrantDeviceCode}; !slices.Equal(as.RegisteredGrants[0], want) {
					t.Errorf("registered grant types %q, want %q", as.RegisteredGrants[0], want)
				}
				c := storedOne(t, tf)
				want := store.Credential{
					Key:           store.Key{Resource: as.Resource(), Issuer: as.URL},
					TokenType:     "Bearer",
					Scopes:        []string{"agent:use"},
					Subject:       "alice",
					Client:        store.ClientRegistration{ClientID: "dcr-1", AuthMethod: "none", Source: "dcr"},
					TokenEndpoint: as.Metadata.TokenEndpoint, RevocationEndpoint: as.Metadata.RevocationEndpoint,
				}
				if c.AccessToken == "" || c.RefreshToken != "rt-secret-1" || c.Expiry.IsZero() || !c.Obtained.Before(c.Expiry) {
					t.Errorf("tokens not stored: obtained %v, expiry %v", c.Obtained, c.Expiry)
				}
				c.AccessToken, c.RefreshToken, c.Expiry, c.Obtained, c.UpdatedAt = "", "", time.Time{}, time.Time{}, time.Time{}
				if diff := cmp.Diff(want, *c); diff != "" {
					t.Errorf("stored credential (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:  "challenge scope plus --scope, --no-resource",
			args:  []string{"--scope", "extra", "--no-resource"},
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) { as.ChallengeScope = "mcp:read mcp:write" },
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				q := as.AuthorizeQuery[0]
				if q.Get("scope") != "mcp:read mcp:write extra" || q.Has("resource") {
					t.Errorf("authorize query = %v", q)
				}
				if tok := as.FormsWith(wire.GrantAuthorizationCode); tok[0].Has("resource") {
					t.Errorf("token request sent resource: %v", tok[0])
				}
				if c := storedOne(t, tf); !c.NoResource {
					t.Error("NoResource not recorded")
				}
			},
		},
		{
			name: "--callback-host localhost",
			args: []string{"--callback-host", "localhost"},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				if got := as.AuthorizeQuery[0].Get("redirect_uri"); !regexp.MustCompile(`^http://localhost:\d+/callback$`).MatchString(got) {
					t.Errorf("redirect_uri = %q", got)
				}
			},
		},
		{
			name:  "pre-registered confidential client, secret on stdin, basic",
			args:  []string{"--client-id", "conf", "--client-secret-stdin"},
			stdin: "s3cret\n",
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) { as.Clients["conf"] = "s3cret" },
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				if as.Registered != 0 || as.TokenAuth[0] == "" {
					t.Errorf("registered %d clients, token Authorization %q", as.Registered, as.TokenAuth[0])
				}
				if c := storedOne(t, tf); c.Client != (store.ClientRegistration{ClientID: "conf", ClientSecret: "s3cret", AuthMethod: "client_secret_basic", Source: "preregistered"}) {
					t.Errorf("client = %+v", c.Client)
				}
			},
		},
		{
			name:  "pre-registered client, post when basic is not offered",
			args:  []string{"--client-id", "conf", "--client-secret-stdin"},
			stdin: "s3cret",
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				as.Clients["conf"] = "s3cret"
				as.Metadata.TokenEndpointAuthMethodsSupported = []string{"client_secret_post"}
			},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				form := as.FormsWith(wire.GrantAuthorizationCode)[0]
				if as.TokenAuth[0] != "" || form.Get("client_secret") != "s3cret" {
					t.Errorf("client_secret_post not used: Authorization %q", as.TokenAuth[0])
				}
			},
		},
		{
			name:     "empty client secret",
			args:     []string{"--client-id", "conf", "--client-secret-stdin"},
			stdin:    "\n",
			wantCode: ExitUsage,
			wantErr:  []string{"--client-secret-stdin: stdin holds no client secret"},
			check:    func(t *testing.T, as *oauthfake.Server, tf *testFactory) { noRequests(t, as) },
		},
		{
			name: "client ID metadata document",
			args: []string{"--client-metadata-url", cimdURL},
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				as.Metadata.ClientIDMetadataDocumentSupported = true
				as.Clients[cimdURL] = ""
			},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				if as.Registered != 0 || as.AuthorizeQuery[0].Get("client_id") != cimdURL {
					t.Errorf("registered %d, client_id %q", as.Registered, as.AuthorizeQuery[0].Get("client_id"))
				}
				if c := storedOne(t, tf); c.Client.Source != "cimd" {
					t.Errorf("client = %+v", c.Client)
				}
			},
		},
		{
			name: "client metadata URL but no server support: registration",
			args: []string{"--client-metadata-url", cimdURL},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				if as.Registered != 1 {
					t.Errorf("registered %d clients, want 1", as.Registered)
				}
			},
		},
		{
			name:  "confidential client from registration",
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) { as.DCRAuthMethod = "client_secret_post" },
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				if form := as.FormsWith(wire.GrantAuthorizationCode)[0]; form.Get("client_secret") != "dcr-secret-dcr-1" {
					t.Errorf("the registered secret was not posted")
				}
				if c := storedOne(t, tf); c.Client.AuthMethod != "client_secret_post" || c.Client.ClientSecret == "" {
					t.Errorf("client = %+v", c.Client)
				}
			},
		},
		{
			name:     "no way to get a client",
			setup:    func(t *testing.T, as *oauthfake.Server, tf *testFactory) { as.Metadata.RegistrationEndpoint = "" },
			wantCode: ExitError,
			wantErr:  []string{`has no registration endpoint \(RFC 7591\)`, `agentauth login --client-id ID \[--client-secret-stdin\] TARGET`},
		},
		{
			name: "stored registration reused",
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				as.Clients["kept"] = ""
				putOther(t, tf, as, store.ClientRegistration{ClientID: "kept", AuthMethod: "none", Source: "dcr"})
			},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				if as.Registered != 0 || as.AuthorizeQuery[0].Get("client_id") != "kept" {
					t.Errorf("registered %d, client_id %q", as.Registered, as.AuthorizeQuery[0].Get("client_id"))
				}
			},
		},
		{
			name: "stale stored registration: dropped, registered again once",
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				putOther(t, tf, as, store.ClientRegistration{ClientID: "forgotten", AuthMethod: "none", Source: "dcr"})
			},
			wantErr: []string{`no longer accepts the stored client forgotten; choosing the client again\.$`, `✓ Logged in to`},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				// Found out before the browser was sent: one sign-in, with
				// the new client.
				// The new registration is known by construction: one
				// client check, of the stale one.
				if as.Registered != 1 || len(as.AuthorizeQuery) != 1 || as.AuthorizeQuery[0].Get("client_id") != "dcr-1" || len(as.PreflightForms) != 1 {
					t.Errorf("registered %d, %d authorizations, %d client checks", as.Registered, len(as.AuthorizeQuery), len(as.PreflightForms))
				}
				c, err := tf.st.Get(context.Background(), store.Key{Resource: as.Resource(), Issuer: as.URL})
				if err != nil || c.Client.ClientID != "dcr-1" {
					t.Errorf("stored client = %+v, %v", c, err)
				}
			},
		},
		{
			name: "--client-id names a client the server rejects: no second attempt",
			args: []string{"--client-id", "forgotten"},
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				putOther(t, tf, as, store.ClientRegistration{ClientID: "forgotten", AuthMethod: "none", Source: "preregistered"})
			},
			wantCode: ExitError,
			wantErr: []string{`^agentauth: cannot log in: http://127\.0\.0\.1:\d+/token does not know the client forgotten: the authorization server rejected the client: invalid_client`,
				`^Check the client ID \(--client-id\) and its secret: the server knows no such client, or refuses its secret\.$`},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				// The authorization probe (no browser) goes on at a
				// sign-in page; the token endpoint's check refuses.
				if as.Registered != 0 || len(as.AuthorizeQuery) != 0 || as.Probes != 1 {
					t.Errorf("registered %d, %d authorizations, %d probes; want no browser sent and one probe", as.Registered, len(as.AuthorizeQuery), as.Probes)
				}
			},
		},
		{
			name: "--client-id of a stored confidential client: its stored secret",
			args: []string{"--client-id", "conf"},
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				as.Clients["conf"] = "s3cret"
				putOther(t, tf, as, store.ClientRegistration{ClientID: "conf", ClientSecret: "s3cret", AuthMethod: "client_secret_basic", Source: "preregistered"})
			},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				if as.TokenAuth[0] == "" {
					t.Error("the stored secret was not sent")
				}
			},
		},
		{
			name: "device flow on a terminal: a spinner with the time left",
			args: []string{"--device"},
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				tf.IO.StderrTTY = true
			},
			wantErr: []string{`\r\x1b\[K. Waiting for approval \((4|5)m left, Ctrl-C to cancel\)`, `✓ Logged in`},
		},
		{
			name:     "authorization refused in the browser",
			setup:    func(t *testing.T, as *oauthfake.Server, tf *testFactory) { as.AuthError = "access_denied" },
			wantCode: ExitAuth,
			wantErr:  []string{`cannot log in: the authorization server refused the authorization: access_denied: the user said no`, `To log in, run: agentauth login http://`},
			check:    func(t *testing.T, as *oauthfake.Server, tf *testFactory) { noneStored(t, tf) },
		},
		{
			name: "keyring unavailable: stops before any request",
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				tf.st = failingStore{store.NewMemory()}
				tf.ProbeKeyring = func(context.Context) error {
					return errors.New("cannot write to the OS keyring: no dbus\nTo store credentials in a file instead, use --store file (or set AGENTAUTH_STORE=file).")
				}
			},
			wantCode: ExitError,
			wantErr:  []string{`^agentauth: cannot log in: cannot write to the OS keyring: no dbus$`, `use --store file`},
			check:    func(t *testing.T, as *oauthfake.Server, tf *testFactory) { noRequests(t, as) },
		},
		{
			name: "corrupt credentials file: stops before any request, file untouched",
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "credentials.json"), []byte(`{"version":1,"credentials":[{`), 0o600); err != nil {
					t.Fatal(err)
				}
				st, err := store.Open(store.KindFile, dir)
				if err != nil {
					t.Fatal(err)
				}
				tf.st = st
			},
			wantCode: ExitError,
			wantErr:  []string{`^agentauth: cannot log in: cannot read \S+/credentials\.json: corrupt data: `, `^Fix the file or move it away`},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				noRequests(t, as)
				if b, _ := os.ReadFile(tf.st.Location()); string(b) != `{"version":1,"credentials":[{` {
					t.Errorf("the corrupt file was rewritten: %s", b)
				}
			},
		},
		{
			name: "keyring write fails after the flow: file store, loud warning",
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				tf.st = failingStore{store.NewMemory()}
				tf.ProbeKeyring = func(context.Context) error { return nil }
			},
			wantErr: []string{`^WARNING: cannot store the credential in the OS keyring: keyring locked$`, `^WARNING: every command finds it there; to keep using the file store, run agentauth with --store file`, `✓ Logged in`},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				st, _ := store.OpenFallback()
				if c, err := st.Get(context.Background(), store.Key{Resource: as.Resource(), Issuer: as.URL}); err != nil || c.RefreshToken == "" {
					t.Errorf("credential not in the file store: %v", err)
				}
			},
		},
		{
			name: "no terminal, no BROWSER: the URL is printed",
			args: []string{"--timeout", "100ms"},
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				tf.IO.StdoutTTY, tf.IO.StderrTTY = false, false
				tf.OpenURL = func(string) error { t.Error("the platform opener ran without a terminal"); return nil }
			},
			wantCode: ExitAuth,
			wantErr: []string{`^No terminal and no \$BROWSER, so no browser was opened\. Open this URL to log in:$`,
				`^  http://127\.0\.0\.1:\d+/authorize\?`, `--device logs in without a browser`, `timed out waiting for the authorization`},
		},
		{
			name: "the browser opens before it is said to",
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				tf.OpenURL = func(u string) error {
					if strings.Contains(tf.errOut.String(), "Opening") {
						t.Error("stderr said the browser was opening before the opener ran")
					}
					return oauthfake.FetchBrowser(u)
				}
			},
			wantErr: []string{`^Opening http://127\.0\.0\.1:\d+/authorize\?\S+ in your browser\.$`, `✓ Logged in`},
		},
		{
			name: "the opener fails: the warning, then the URL to open by hand",
			args: []string{"--timeout", "100ms"},
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				tf.OpenURL = func(string) error { return errors.New("cannot open a browser: no display") }
			},
			wantCode: ExitAuth,
			wantErr: []string{`^warning: cannot open a browser: no display; log in with --device instead .*; or open the URL below yourself\.\nOpen this URL in a browser to log in:\n  http://127\.0\.0\.1:\d+/authorize\?`,
				`timed out waiting for the authorization`},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				if strings.Contains(tf.errOut.String(), "Opening") {
					t.Errorf("stderr says a browser is opening after the opener failed:\n%s", tf.errOut)
				}
			},
		},
		{
			name: "--no-browser prints the URL",
			args: []string{"--no-browser", "--timeout", "100ms"},
			setup: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				tf.OpenURL = func(string) error { t.Error("browser opened"); return nil }
			},
			wantCode: ExitAuth,
			wantErr:  []string{`^Open this URL in a browser to log in:$`, `^  http://127\.0\.0\.1:\d+/authorize\?`},
		},
		{
			name: "device flow",
			args: []string{"--device"},
			wantErr: []string{`^To log in, open http://127\.0\.0\.1:\d+/activate and enter the code WDJB-MJHT$`,
				`^or open http://127\.0\.0\.1:\d+/activate\?user_code=WDJB-MJHT$`, `✓ Logged in to http://\S+ as alice`},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				polls := as.FormsWith(wire.GrantDeviceCode)
				if len(polls) != 1 || polls[0].Get("resource") != as.Resource() {
					t.Errorf("device polls = %v", polls)
				}
				if len(as.AuthorizeQuery) != 0 {
					t.Error("the browser flow ran")
				}
			},
		},
		{
			name: "--json",
			args: []string{"--json"},
			check: func(t *testing.T, as *oauthfake.Server, tf *testFactory) {
				var doc loginDoc
				if err := json.Unmarshal(tf.out.Bytes(), &doc); err != nil {
					t.Fatalf("stdout is not JSON: %v\n%s", err, tf.out)
				}
				if len(doc.Logins) != 1 || doc.Logins[0].Subject != "alice" || doc.Logins[0].Client.ClientID != "dcr-1" ||
					!doc.Logins[0].Refreshable || doc.Logins[0].Store != "memory" || doc.Target != as.Resource() {
					t.Errorf("document = %+v", doc)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthfake.New(t)
			tf := newTestFactory(t, tt.stdin)
			if tt.setup != nil {
				tt.setup(t, as, tf)
			}
			code := tf.run(append(append([]string{"login"}, tt.args...), as.Resource())...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, tf.errOut)
			}
			for _, re := range tt.wantErr {
				if !regexp.MustCompile("(?m)" + re).MatchString(tf.errOut.String()) {
					t.Errorf("stderr lacks %s:\n%s", re, tf.errOut)
				}
			}
			if !slices.Contains(tt.args, "--json") && tf.out.Len() > 0 {
				t.Errorf("stdout is not empty: %s", tf.out)
			}
			if tt.check != nil {
				tt.check(t, as, tf)
			}
			assertNoSecrets(t, tf.out.String(), tf.errOut.String())
		})
	}
}

func TestLoginCallbackPortTaken(t *testing.T) {
	as := oauthfake.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tf := newTestFactory(t, "")
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if code := tf.run("login", "--callback-port", port, as.Resource()); code != ExitError {
		t.Fatalf("exit %d, want 1", code)
	}
	if want := "cannot listen for the login callback: the callback port is already in use: 127.0.0.1:" + port +
		"\nChoose another --callback-port, or leave it out to listen on a free port.\n"; !strings.Contains(tf.errOut.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, tf.errOut)
	}
}

func storedOne(t *testing.T, tf *testFactory) *store.Credential {
	t.Helper()
	all, err := tf.st.List(context.Background())
	if err != nil || len(all) != 1 {
		t.Fatalf("stored %d credentials (%v), want 1", len(all), err)
	}
	return all[0]
}

func noneStored(t *testing.T, tf *testFactory) {
	t.Helper()
	if all, _ := tf.st.List(context.Background()); len(all) != 0 {
		t.Errorf("stored %d credentials, want none", len(all))
	}
}

func noRequests(t *testing.T, as *oauthfake.Server) {
	t.Helper()
	if as.Hits != 0 {
		t.Errorf("%d requests reached the servers, want none", as.Hits)
	}
}

// putOther stores a credential for another resource of the same issuer,
// holding reg: what an earlier login left.
func putOther(t *testing.T, tf *testFactory, as *oauthfake.Server, reg store.ClientRegistration) {
	t.Helper()
	c := &store.Credential{Key: store.Key{Resource: as.URL + "/other", Issuer: as.URL}, AccessToken: "x", Client: reg}
	if err := tf.st.Put(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}
