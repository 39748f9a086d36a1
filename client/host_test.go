package client

import (
	"testing"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// TestCredentialFor: a host's requirement gets the credential logged in
// through that target first, then one for the same resource, issuer and
// scheme, then one logged in through the resource's HTTP face; never one
// for another audience.
func TestCredentialFor(t *testing.T) {
	req := wire.Requirement{SchemeID: "dev", Resource: "http://h/mcp", AuthorizationServers: []string{"http://as"}}
	viaTarget := &store.Credential{Key: store.Key{Resource: "http://old/mcp", Issuer: "http://old-as", SchemeID: "dev"}, Target: "ws://h", AllowedTargets: []string{"http://h"}}
	// crossOrigin was logged in through ws://h before logins checked the
	// origin: ws://h may not receive it.
	crossOrigin := &store.Credential{Key: store.Key{Resource: "http://old/mcp", Issuer: "http://old-as", SchemeID: "dev"}, Target: "ws://h"}
	sameScheme := &store.Credential{Key: store.Key{Resource: "http://h/mcp", Issuer: "http://as", SchemeID: "dev"}, Target: "stdio:agent"}
	viaHTTP := &store.Credential{Key: store.Key{Resource: "http://h/mcp", Issuer: "http://as"}, Target: "http://h/mcp"}
	otherIssuer := &store.Credential{Key: store.Key{Resource: "http://h/mcp", Issuer: "http://evil"}, Target: "http://h/mcp"}
	otherResource := &store.Credential{Key: store.Key{Resource: "http://x/mcp", Issuer: "http://as", SchemeID: "dev"}}
	for _, tc := range []struct {
		name  string
		creds []*store.Credential
		want  *store.Credential
	}{
		{"through the target wins", []*store.Credential{viaHTTP, sameScheme, viaTarget}, viaTarget},
		{"same resource, issuer and scheme", []*store.Credential{viaHTTP, sameScheme}, sameScheme},
		{"the resource's HTTP face", []*store.Credential{otherIssuer, viaHTTP}, viaHTTP},
		{"nothing for another issuer or resource", []*store.Credential{otherIssuer, otherResource}, nil},
		{"one the target may receive beats one on another origin", []*store.Credential{crossOrigin, viaHTTP}, viaHTTP},
		{"one on another origin comes last, to be refused when used", []*store.Credential{crossOrigin}, crossOrigin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CredentialFor(tc.creds, "ws://h", req); got != tc.want {
				t.Errorf("credentialFor = %+v, want %+v", got, tc.want)
			}
		})
	}
}
