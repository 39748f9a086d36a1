package client

import (
	"testing"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// TestCredentialForResourcesWithoutSchemeIDs: a shipped AHP host declares
// its protected resources without scheme ids; each requirement gets the
// credential logged in through the target for its own resource, and
// PickRequirement finds one by its resource.
func TestCredentialForResourcesWithoutSchemeIDs(t *testing.T) {
	const target = "stdio:host"
	reqs := []wire.Requirement{
		{Resource: "https://api.github.com", AuthorizationServers: []string{"http://as"}, Required: true},
		{Resource: "https://api.example.com", AuthorizationServers: []string{"http://as"}, Required: true},
	}
	gh := &store.Credential{Key: store.Key{Resource: "https://api.github.com", Issuer: "http://as"}, Target: target, AllowedTargets: []string{target}}
	ex := &store.Credential{Key: store.Key{Resource: "https://api.example.com", Issuer: "http://as"}, Target: target, AllowedTargets: []string{target}}
	creds := []*store.Credential{gh, ex}
	for i, want := range []*store.Credential{gh, ex} {
		if got := CredentialFor(creds, target, reqs[i]); got != want {
			t.Errorf("%s: credential for %v", reqs[i].Resource, got.Key)
		}
	}
	r, err := PickRequirement(reqs, "https://api.example.com")
	if err != nil || r.Resource != "https://api.example.com" {
		t.Errorf("PickRequirement by resource = %+v, %v", r, err)
	}
}
