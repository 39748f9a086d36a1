package commands

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/store"
)

func TestRevokeFlags(t *testing.T) {
	checkFlags(t, []flagCase[RevokeOptions]{
		{args: []string{"ws://h"}, want: RevokeOptions{Target: "ws://h"}},
		{args: []string{"--scheme", "dev", "--local-only", "--json", "ws://h"}, want: RevokeOptions{Target: "ws://h", SchemeID: "dev", LocalOnly: true, JSON: true}},
		{args: nil, wantCode: ExitUsage},
		{args: []string{"ws://h", "extra"}, wantCode: ExitUsage},
	}, revokeCommand, func(f *Factory, o *RevokeOptions) bool {
		ok := o.IO == f.IO && o.Client == f.Client()
		o.IO, o.Client = nil, nil
		return ok
	})
}

func TestRevoke(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(fx *authFixture)
		args        []string
		code        int
		stderr      string
		wantRevoked []string
		wantDeleted bool
		wantAS      int // requests the revocation endpoint saw
	}{{
		name:        "refresh token, then access token, then deleted",
		setup:       func(fx *authFixture) { fx.seed("at-1", time.Hour, nil) },
		stderr:      "✓ dev: revoked at {AS}/revoke and deleted from the memory store\n",
		wantRevoked: []string{"refresh_token:rt-0", "access_token:at-1"},
		wantDeleted: true,
		wantAS:      2,
	}, {
		name: "no revocation endpoint",
		setup: func(fx *authFixture) {
			fx.seed("at-1", time.Hour, func(c *store.Credential) { c.RevocationEndpoint = "" })
		},
		stderr: "! dev: deleted from the memory store; {AS} has no revocation endpoint, so the access token stays valid " +
			"until it expires (in 59m), the refresh token until the authorization server drops it\n",
		wantDeleted: true,
	}, {
		name:        "local only",
		setup:       func(fx *authFixture) { fx.seed("at-1", time.Hour, func(c *store.Credential) { c.RefreshToken = "" }) },
		args:        []string{"--local-only"},
		stderr:      "✓ dev: deleted from the memory store (not revoked: the access token stays valid until it expires (in 59m))\n",
		wantDeleted: true,
	}, {
		name: "revocation endpoint fails",
		setup: func(fx *authFixture) {
			fx.seed("at-1", time.Hour, nil)
			fx.revokeStatus = http.StatusServiceUnavailable
		},
		code: ExitError,
		stderr: "X dev: cannot revoke the refresh token: HTTP 503 Service Unavailable from {AS}/revoke; the credential is kept\n" +
			"agentauth: the credential that could not be revoked is kept: run token-revoke again once the authorization server is reachable, or delete it with --local-only\n",
		wantAS: 1,
	}, {
		name:   "nothing stored",
		code:   ExitAuth,
		stderr: "agentauth: cannot revoke: no stored credential for {TARGET}\n",
	}, {
		name:   "another scheme",
		setup:  func(fx *authFixture) { fx.seed("at-1", time.Hour, nil) },
		args:   []string{"--scheme", "docs"},
		code:   ExitAuth,
		stderr: "agentauth: cannot revoke: no stored credential for {TARGET} (scheme docs)\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newAuthFixture(t, host.AuthScopeConnection)
			if tt.setup != nil {
				tt.setup(fx)
			}
			code, stdout, stderr := fx.run("", append(append([]string{"token-revoke"}, tt.args...), "{TARGET}")...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if diff := cmp.Diff(fx.expand(tt.stderr), stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing without --json", stdout)
			}
			if diff := cmp.Diff(tt.wantRevoked, fx.revoked); diff != "" {
				t.Errorf("revoked (-want +got):\n%s", diff)
			}
			if len(fx.revokeAuth) != tt.wantAS {
				t.Errorf("the revocation endpoint saw %d requests, want %d", len(fx.revokeAuth), tt.wantAS)
			}
			for _, id := range fx.revokeAuth {
				if id != "cli-1" {
					t.Errorf("revocation sent client_id %q, want the registration's cli-1", id)
				}
			}
			if deleted := fx.stored() == nil; deleted != tt.wantDeleted && tt.setup != nil {
				t.Errorf("deleted = %v, want %v", deleted, tt.wantDeleted)
			}
		})
	}
}

func TestRevokeJSON(t *testing.T) {
	fx := newAuthFixture(t, host.AuthScopeConnection)
	fx.seed("at-1", time.Hour, nil)
	code, stdout, _ := fx.run("", "token-revoke", "--json", "{TARGET}")
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	var doc any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"target": fx.target, "credentials": []any{map[string]any{
		"resource": testResource, "issuer": fx.as.URL, "schemeId": "dev", "revocationEndpoint": fx.as.URL + "/revoke",
		"server": "revoked", "deleted": true, "message": "revoked at " + fx.as.URL + "/revoke and deleted from the memory store"}}}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("--json (-want +got):\n%s", diff)
	}
}

func TestRevokeOnlyWhatTheTargetLoggedIn(t *testing.T) {
	fx := newAuthFixture(t, host.AuthScopeConnection)
	fx.seed("at-1", time.Hour, func(c *store.Credential) { c.RevocationEndpoint = "" })
	fx.seed("at-2", time.Hour, func(c *store.Credential) { c.SchemeID, c.Target, c.RevocationEndpoint = "", "", "" })
	// The MCP URL is also the agent host credential's resource: only the
	// credential logged in through the URL itself goes.
	code, _, stderr := fx.run("", "token-revoke", testResource)
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr)
	}
	if fx.stored() == nil {
		t.Error("the agent host's credential was deleted too")
	}
	if !strings.HasPrefix(stderr, "! "+testResource+": deleted") {
		t.Errorf("stderr = %q", stderr)
	}
	// With none left for the URL itself, its resource matches.
	if code, _, stderr := fx.run("", "token-revoke", testResource); code != 0 || !strings.HasPrefix(stderr, "! dev: deleted") {
		t.Errorf("second token-revoke: exit %d, stderr %q", code, stderr)
	}
}
