package flows

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// Discovery from a challenge already received (a 403 insufficient_scope of
// an MCP request) sends no probe: the challenge's resource_metadata and
// scope are used, even though the endpoint would answer a probe without
// any challenge.
func TestDiscoverResourceFromChallenge(t *testing.T) {
	rs := newResourceServer(t, "")
	rs.prm("/custom/prm", "{{URL}}/mcp", "http://127.0.0.1:9")
	rs.prm("/.well-known/oauth-protected-resource/mcp", "{{URL}}/other", "http://127.0.0.1:9") // must not be used
	c, _ := wire.BearerChallenge([]string{`Bearer error="insufficient_scope", scope="a b", resource_metadata="` + rs.srv.URL + `/custom/prm"`})
	d, err := DiscoverResourceFromChallenge(context.Background(), nil, rs.srv.URL+"/mcp", http.StatusForbidden, c)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != http.StatusForbidden || d.Scope != "a b" || d.Error != "insufficient_scope" || d.MetadataURL != rs.srv.URL+"/custom/prm" {
		t.Errorf("got status %d scope %q error %q metadata %q", d.Status, d.Scope, d.Error, d.MetadataURL)
	}
	if got := strings.Join(rs.hits, ","); got != "GET /custom/prm" {
		t.Errorf("requests %q, want only the resource_metadata fetch", got)
	}

	// No challenge at all: the well-known documents, still without a probe.
	rs.hits = nil
	d, err = DiscoverResourceFromChallenge(context.Background(), nil, rs.srv.URL+"/mcp", http.StatusUnauthorized, wire.AuthChallenge{})
	if err == nil {
		t.Fatalf("the path-aware document names another resource, yet discovery gave %+v", d)
	}
	if got := strings.Join(rs.hits, ","); got != "GET /.well-known/oauth-protected-resource/mcp" {
		t.Errorf("requests %q", got)
	}
}
