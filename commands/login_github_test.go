package commands

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentauth/agentauth/client"
)

// TestLoginGitHubFlags parses login's GitHub and no-metadata flags.
func TestLoginGitHubFlags(t *testing.T) {
	t.Setenv(client.EnvGitHubClientID, "Iv1.env")
	base := LoginOptions{Target: "ws://h", LoginChoices: LoginChoices{CallbackHost: "127.0.0.1"}, Timeout: 5 * time.Minute, GitHubClientID: "Iv1.env"}
	with := func(f func(*LoginOptions)) LoginOptions { o := base; f(&o); return o }
	checkFlags(t, []flagCase[LoginOptions]{
		{name: "github", args: []string{"--web", "--github-host", "ghes.corp.example", "ws://h"},
			want: with(func(o *LoginOptions) { o.Web, o.GitHubHost = true, "ghes.corp.example" })},
		{name: "loopback github", args: []string{"--github-host", "http://127.0.0.1:8080", "ws://h"},
			want: with(func(o *LoginOptions) { o.GitHubHost = "http://127.0.0.1:8080" })},
		{name: "endpoints", args: []string{"--authorization-endpoint", "https://as.example/authorize", "--token-endpoint", "https://as.example/token",
			"--device-authorization-endpoint", "https://as.example/device", "--revocation-endpoint", "https://as.example/revoke", "ws://h"},
			want: with(func(o *LoginOptions) {
				o.Endpoints = client.Endpoints{Authorization: "https://as.example/authorize", Token: "https://as.example/token",
					DeviceAuthorization: "https://as.example/device", Revocation: "https://as.example/revoke"}
			})},
		{name: "remote http github host", args: []string{"--github-host", "http://ghes.corp.example", "ws://h"}, wantCode: ExitUsage, wantErr: "--github-host must be a host name, or an https URL"},
		{name: "no token endpoint", args: []string{"--device-authorization-endpoint", "https://as.example/device", "ws://h"}, wantCode: ExitUsage, wantErr: "--device-authorization-endpoint needs --token-endpoint"},
		{name: "http endpoint", args: []string{"--token-endpoint", "http://as.example/token", "ws://h"}, wantCode: ExitUsage, wantErr: "--token-endpoint must be an https URL"},
		{name: "github and endpoints", args: []string{"--github-host", "ghes.corp.example", "--token-endpoint", "https://as.example/token", "ws://h"}, wantCode: ExitUsage, wantErr: "exclude each other"},
		{name: "web and device", args: []string{"--web", "--device", "ws://h"}, wantCode: ExitUsage, wantErr: "--web and --device exclude each other"},
	}, loginCommandWith, func(f *Factory, o *LoginOptions) bool {
		ok := o.IO == f.IO && o.Factory == f
		o.IO, o.Factory = nil, nil
		return ok
	}, cmpopts.IgnoreUnexported(LoginChoices{}))
}
