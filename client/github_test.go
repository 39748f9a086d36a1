package client

import (
	"testing"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/wire"
)

// TestGitHubHostFor: which authorization servers get GitHub's flow.
func TestGitHubHostFor(t *testing.T) {
	md := &wire.AuthServerMetadata{Issuer: "x"}
	tests := []struct {
		name     string
		as       string
		metadata bool
		flagHost string
		want     string // the GitHub host's origin; "" for none
	}{
		{"github.com", "https://github.com/login/oauth", true, "", "https://github.com"},
		{"ghe.com tenant", "https://octocorp.ghe.com/login/oauth", false, "", "https://octocorp.ghe.com"},
		{"enterprise server without metadata", "https://ghes.corp.example/login/oauth", false, "", "https://ghes.corp.example"},
		{"login/oauth with metadata is not taken for GitHub", "https://as.example/login/oauth", true, "", ""},
		{"--github-host names it", "https://ghes.corp.example/login/oauth", true, "ghes.corp.example", "https://ghes.corp.example"},
		{"--github-host URL", "http://127.0.0.1:8080/login/oauth", true, "http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"--github-host names another host", "https://github.com/login/oauth", true, "ghes.corp.example", "https://github.com"},
		{"another server", "https://as.example", false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &RequirementInfo{Requirement: wire.Requirement{AuthorizationServers: []string{tt.as}}}
			if tt.metadata {
				r.AuthServer = md
			} else {
				r.Err = flows.ErrNoAuthServerMetadata
			}
			gh, err := gitHubHostFor(r, tt.flagHost)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if gh != nil {
				got = gh.Base
			}
			if got != tt.want {
				t.Errorf("GitHub host = %q, want %q", got, tt.want)
			}
		})
	}
}
