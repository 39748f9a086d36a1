package commands

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/store"
)

func TestStatusFlags(t *testing.T) {
	checkFlags(t, []flagCase[StatusOptions]{
		{args: nil, want: StatusOptions{}},
		{args: []string{"--json", "--show-token"}, want: StatusOptions{JSON: true, ShowToken: true}},
		{args: []string{"--json", "ws://h"}, want: StatusOptions{Target: "ws://h", JSON: true}},
		{args: []string{"ws://a", "ws://b"}, wantCode: ExitUsage},
		{args: []string{"--token", "ws://a"}, wantCode: ExitUsage},
		{args: []string{"--check", "stdio:agent --acp"}, want: StatusOptions{Target: "stdio:agent --acp", Check: true}},
		{args: []string{"--check"}, wantCode: ExitUsage, wantErr: "--check applies to an ACP agent"},
		{args: []string{"--check", "http://127.0.0.1:7777/mcp"}, wantCode: ExitUsage, wantErr: "--check applies to an ACP agent"},
	}, statusCommand, func(f *Factory, o *StatusOptions) bool {
		ok := o.IO == f.IO && o.Client == f.Client()
		o.IO, o.Client = nil, nil
		return ok
	})
}

// jwtish is a token long enough to be masked to its first 4 characters.
const jwtish = "eyJhbGciOiJFUzI1NiJ9.secret-part"

func TestStatusStore(t *testing.T) {
	valid := func(fx *authFixture) {
		fx.seed(jwtish, time.Hour, nil)
	}
	refreshable := func(fx *authFixture) {
		fx.seed(jwtish, -3*time.Hour-time.Minute, func(c *store.Credential) {
			c.Resource, c.SchemeID, c.Target = "https://other.example/mcp", "", ""
		})
	}
	expired := func(fx *authFixture) {
		fx.seed(jwtish, -50*time.Hour, func(c *store.Credential) {
			c.Resource, c.SchemeID, c.Target, c.RefreshToken, c.Subject, c.Scopes = "https://third.example/mcp", "x", "ws://third.example", "", "", nil
		})
	}
	expiredHTTP := func(fx *authFixture) {
		fx.seed(jwtish, -50*time.Hour, func(c *store.Credential) {
			c.Resource, c.SchemeID, c.Target, c.RefreshToken = "https://fourth.example/mcp", "", "", ""
		})
	}
	const validBlock = `https://agent.example/mcp
  ✓ dev: logged in as alice
  - Issuer: {AS}
  - Target: {TARGET}
  - Scopes: agent:use
  - Expiry: expires in 59m
  - Token: eyJh***
`
	const refreshableBlock = `https://other.example/mcp
  ! Logged in as alice
  - Issuer: {AS}
  - Scopes: agent:use
  - Expiry: expired 3h ago, refreshable
  - Token: eyJh***
`
	const expiredBlock = `https://third.example/mcp
  X x: logged in (subject unknown)
  - Issuer: {AS}
  - Target: ws://third.example
  - Scopes: (none)
  - Expiry: expired 2d ago, not refreshable
  - Token: eyJh***
  - To log in again, run: agentauth login --scheme x ws://third.example
`
	const storeLine = "\nStore: memory, memory (this process only)\n"
	tests := []struct {
		name   string
		setup  []func(*authFixture)
		args   []string
		code   int
		stdout string
		stderr string
	}{{
		name:   "empty store",
		code:   ExitAuth,
		stderr: "No credentials in the memory store (memory (this process only)). To log in, run: agentauth login TARGET\n",
	}, {
		name:   "valid",
		setup:  []func(*authFixture){valid},
		stdout: validBlock + storeLine,
	}, {
		name:   "valid and refreshable",
		setup:  []func(*authFixture){valid, refreshable},
		stdout: validBlock + "\n" + refreshableBlock + storeLine,
	}, {
		name:   "one expired",
		setup:  []func(*authFixture){valid, refreshable, expired},
		code:   ExitAuth,
		stdout: validBlock + "\n" + refreshableBlock + "\n" + expiredBlock + storeLine,
		stderr: "agentauth: the credential for https://third.example/mcp (scheme x) has expired and cannot be refreshed\n" +
			"To log in, run: agentauth login --scheme x ws://third.example\n",
	}, {
		name:  "two expired",
		setup: []func(*authFixture){expired, expiredHTTP},
		code:  ExitAuth,
		stdout: `https://fourth.example/mcp
  X Logged in as alice
  - Issuer: {AS}
  - Scopes: agent:use
  - Expiry: expired 2d ago, not refreshable
  - Token: eyJh***
  - To log in again, run: agentauth login https://fourth.example/mcp

` + expiredBlock + storeLine,
		stderr: "agentauth: 2 stored credentials have expired (or were rejected) and cannot be refreshed\n" +
			"To log in, run: agentauth login https://fourth.example/mcp\nTo log in, run: agentauth login --scheme x ws://third.example\n",
	}, {
		name:   "show token",
		setup:  []func(*authFixture){valid},
		args:   []string{"--show-token"},
		stdout: strings.Replace(validBlock, "eyJh***", jwtish, 1) + storeLine,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newAuthFixture(t, host.AuthScopeConnection)
			for _, s := range tt.setup {
				s(fx)
			}
			code, stdout, stderr := fx.run("", append([]string{"status"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if diff := cmp.Diff(fx.expand(tt.stdout), stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.stderr, stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusStoreJSON(t *testing.T) {
	fx := newAuthFixture(t, host.AuthScopeConnection)
	fx.seed(jwtish, -time.Minute, nil)
	code, stdout, _ := fx.run("", "status", "--json")
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	cred := doc["credentials"].([]any)[0].(map[string]any)
	if _, err := time.Parse(time.RFC3339, cred["expiresAt"].(string)); err != nil {
		t.Errorf("expiresAt: %v", err)
	}
	delete(cred, "expiresAt")
	want := map[string]any{
		"store":  map[string]any{"kind": "memory", "location": "memory (this process only)"},
		"usable": true,
		"credentials": []any{map[string]any{"resource": testResource, "issuer": fx.as.URL, "schemeId": "dev", "target": fx.target,
			"subject": "alice", "scopes": []any{"agent:use"}, "state": "refreshable", "refreshable": true, "clientId": "cli-1", "token": "eyJh***"}},
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("--json (-want +got):\n%s", diff)
	}
}

func TestStatusTarget(t *testing.T) {
	tests := []struct {
		name      string
		authScope string
		setup     func(fx *authFixture)
		code      int
		stdout    string
		stderr    string
	}{{
		name: "not logged in",
		code: ExitAuth,
		stdout: `{TARGET}
  X dev: not logged in
  - Host before: no token for https://agent.example/mcp
  - Host after: no token for https://agent.example/mcp
  - Stored: none
  ! docs: not logged in (optional)
  - Host before: no token for https://agent.example/mcp/docs
  - Host after: no token for https://agent.example/mcp/docs
  - Stored: none
`,
		stderr: "agentauth: not authenticated to {TARGET} (dev)\nTo log in, run: agentauth login --scheme dev {TARGET}\n",
	}, {
		name: "logged in, refreshed on the way",
		setup: func(fx *authFixture) {
			fx.seed("at-unknown", time.Hour, nil)
			fx.next = []string{"at-2"}
		},
		stdout: `{TARGET}
  ✓ dev: accepted as alice (agent:use)
  - Host before: no token for https://agent.example/mcp
  - Host after: authenticated as alice
  - Stored: alice, agent:use, expires in 59m
  - Token: ***
  ! docs: not logged in (optional)
  - Host before: no token for https://agent.example/mcp/docs
  - Host after: no token for https://agent.example/mcp/docs
  - Stored: none
`,
	}, {
		name:      "the host already holds a token",
		authScope: host.AuthScopeHost,
		setup: func(fx *authFixture) {
			if code, _, stderr := fx.run("at-1", "authenticate", "--token-stdin", "{TARGET}"); code != 0 {
				fx.t.Fatalf("authenticate: %s", stderr)
			}
		},
		stdout: `{TARGET}
  ✓ dev: authenticated with a token the host already holds (none stored here)
  - Host before: authenticated as alice
  - Host after: authenticated as alice
  - Stored: none
  ! docs: not logged in (optional)
  - Host before: no token for https://agent.example/mcp/docs
  - Host after: no token for https://agent.example/mcp/docs
  - Stored: none
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scope := tt.authScope
			if scope == "" {
				scope = host.AuthScopeConnection
			}
			fx := newAuthFixture(t, scope)
			if tt.setup != nil {
				tt.setup(fx)
			}
			code, stdout, stderr := fx.run("", "status", "{TARGET}")
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if diff := cmp.Diff(fx.expand(tt.stdout), stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(fx.expand(tt.stderr), stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}
