package issuer_test

import (
	"context"
	"slices"
	"testing"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/issuer"
)

// TestAssertion: an identity assertion is an RFC 9068 token of this
// issuer for the backend's audience, naming the caller, living a minute.
func TestAssertion(t *testing.T) {
	s := start(t, issuer.Options{})
	a, err := s.iss.Assertion(context.Background(), "alice", "cli", "http://127.0.0.1:9/mcp", []string{"agent:use"})
	if err != nil {
		t.Fatal(err)
	}
	c := s.verify(a)
	if !slices.Equal(c.Audience, jwt.Audience{"http://127.0.0.1:9/mcp"}) || c.Subject != "alice" || c.ClientID != "cli" || c.Scope != "agent:use" {
		t.Errorf("claims %+v", c)
	}
	if got := c.Expiry.Time().Sub(c.IssuedAt.Time()); got != issuer.AssertionTTL {
		t.Errorf("lifetime %s, want %s", got, issuer.AssertionTTL)
	}
}
