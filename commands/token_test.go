package commands

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/store"
)

func TestTokenFlags(t *testing.T) {
	checkFlags(t, []flagCase[TokenOptions]{
		{args: []string{"ws://h"}, want: TokenOptions{Target: "ws://h"}},
		{args: []string{"--scheme", "gh", "https://mcp.example/mcp"}, want: TokenOptions{Target: "https://mcp.example/mcp", SchemeID: "gh"}},
		{args: nil, wantCode: ExitUsage, wantErr: "token expects TARGET"},
		{args: []string{"ws://h", "extra"}, wantCode: ExitUsage, wantErr: "token expects TARGET"},
		{args: []string{"127.0.0.1:7777"}, wantCode: ExitUsage, wantErr: `target "127.0.0.1:7777" has no scheme: did you mean ws://127.0.0.1:7777`},
	}, tokenCommand, func(f *Factory, o *TokenOptions) bool {
		ok := o.IO == f.IO && o.Client == f.Client()
		o.IO, o.Client = nil, nil
		return ok
	})
}

func TestToken(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// setup stores credentials; it returns the target to ask for.
		setup    func(t *testing.T, as *oauthfake.Server, st store.Store) string
		wantCode int
		// wantToken: stdout must be exactly the stored access token.
		wantToken     bool
		wantErr       []string
		wantRefreshes int
		// wantScheme is the scheme of the credential printed ("" means
		// dev, "-" none).
		wantScheme string
	}{
		{
			name: "valid token printed as is",
			setup: func(t *testing.T, as *oauthfake.Server, st store.Store) string {
				as.Seed(t, st, time.Now().Add(time.Hour), nil)
				return "ws://host.example"
			},
			wantToken: true,
		},
		{
			name: "expired token refreshed first",
			setup: func(t *testing.T, as *oauthfake.Server, st store.Store) string {
				as.Seed(t, st, time.Now().Add(-time.Second), nil)
				return "ws://host.example"
			},
			wantToken:     true,
			wantRefreshes: 1,
		},
		{
			name: "by resource, with --scheme",
			args: []string{"--scheme", "dev"},
			setup: func(t *testing.T, as *oauthfake.Server, st store.Store) string {
				as.Seed(t, st, time.Now().Add(time.Hour), nil)
				return as.Resource()
			},
			wantToken: true,
		},
		{
			name: "a resource URL prefers its own login to a host's",
			setup: func(t *testing.T, as *oauthfake.Server, st store.Store) string {
				as.Seed(t, st, time.Now().Add(time.Hour), nil)
				as.Seed(t, st, time.Now().Add(time.Hour), func(c *store.Credential) { c.SchemeID, c.Target = "", "" })
				return as.Resource()
			},
			wantToken:  true,
			wantScheme: "-",
		},
		{
			name:     "nothing stored",
			setup:    func(t *testing.T, as *oauthfake.Server, st store.Store) string { return "ws://host.example" },
			wantCode: ExitAuth,
			wantErr:  []string{`^agentauth: no stored credential for ws://host.example$`, `^To log in, run: agentauth login ws://host.example$`},
		},
		{
			name: "unknown scheme",
			args: []string{"--scheme", "gh"},
			setup: func(t *testing.T, as *oauthfake.Server, st store.Store) string {
				as.Seed(t, st, time.Now().Add(time.Hour), nil)
				return "ws://host.example"
			},
			wantCode: ExitAuth,
			wantErr:  []string{`^To log in, run: agentauth login --scheme gh ws://host.example$`},
		},
		{
			name: "expired, refresh refused",
			setup: func(t *testing.T, as *oauthfake.Server, st store.Store) string {
				as.Seed(t, st, time.Now().Add(-time.Hour), func(c *store.Credential) { c.RefreshToken = "rt-secret-revoked" })
				return "ws://host.example"
			},
			wantCode: ExitAuth,
			wantErr:  []string{`cannot refresh the token for \S+ \(scheme dev\): .*invalid_grant`, `^To log in, run: agentauth login --scheme dev ws://host.example$`},
		},
		{
			name: "several schemes need --scheme",
			setup: func(t *testing.T, as *oauthfake.Server, st store.Store) string {
				as.Seed(t, st, time.Now().Add(time.Hour), nil)
				as.Seed(t, st, time.Now().Add(time.Hour), func(c *store.Credential) { c.SchemeID = "gh" })
				return "ws://host.example"
			},
			wantCode: ExitUsage,
			wantErr:  []string{`ws://host.example has credentials for several schemes \(dev, gh\): choose one with --scheme`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthfake.New(t)
			tf := newTestFactory(t, "")
			target := tt.setup(t, as, tf.st)
			code := tf.run(append(append([]string{"token"}, tt.args...), target)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, tf.errOut)
			}
			for _, re := range tt.wantErr {
				if !regexp.MustCompile("(?m)" + re).MatchString(tf.errOut.String()) {
					t.Errorf("stderr lacks %s:\n%s", re, tf.errOut)
				}
			}
			if as.Refreshes != tt.wantRefreshes {
				t.Errorf("%d refreshes, want %d", as.Refreshes, tt.wantRefreshes)
			}
			if !tt.wantToken {
				if tf.out.Len() > 0 {
					t.Errorf("stdout = %q, want nothing", tf.out)
				}
			} else {
				scheme := map[string]string{"": "dev", "-": ""}[tt.wantScheme]
				c, err := tf.st.Get(context.Background(), store.Key{Resource: as.Resource(), Issuer: as.URL, SchemeID: scheme})
				if err != nil || tf.out.String() != c.AccessToken+"\n" {
					t.Errorf("stdout = %q, want the stored token of scheme %q and a newline", tf.out, scheme)
				}
			}
			assertNoSecrets(t, tf.errOut.String())
		})
	}
}
