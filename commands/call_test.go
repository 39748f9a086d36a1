package commands

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

func TestCallFlags(t *testing.T) {
	noLogin := CallLoginOptions{LoginChoices: LoginChoices{CallbackHost: "127.0.0.1"}}
	wait := client.SignInOptions{WaitTimeout: client.DefaultSignInWait}
	checkFlags(t, []flagCase[CallOptions]{
		{args: []string{"ws://h", "whoami"},
			want: CallOptions{DialectAuto: true, Target: "ws://h", Method: "whoami", Login: noLogin, SignIn: wait}},
		{args: []string{"--token-stdin", "--scheme", "dev", "--watch", "--max-notifications", "2", "--json", "--dialect", "published",
			"stdio:agentauth serve --stdio", "echo", ` {"hi":1}`},
			want: CallOptions{Target: "stdio:agentauth serve --stdio", Method: "echo", Params: json.RawMessage(`{"hi":1}`), TokenStdin: true,
				SchemeID: "dev", Watch: true, MaxNotifications: 2, JSON: true, Dialect: wire.DialectPublished, Login: noLogin, SignIn: wait}},
		{args: []string{"--token-stdin", "--set-auth-token", "ws://h", "whoami"},
			want: CallOptions{DialectAuto: true, Target: "ws://h", Method: "whoami", TokenStdin: true, SetAuthToken: true, Login: noLogin, SignIn: wait}},
		{args: []string{"--login", "--scope", "a", "--scope", "b", "--client-id", "app", "--client-secret-stdin",
			"--client-metadata-url", "https://app.example/c.json", "--device", "--no-browser", "--callback-host", "localhost",
			"https://mcp.example/mcp", "tools/list"},
			want: CallOptions{DialectAuto: true, Target: "https://mcp.example/mcp", Method: "tools/list", Login: CallLoginOptions{Enabled: true, LoginChoices: LoginChoices{
				Scopes: []string{"a", "b"}, ClientID: "app", ClientSecretStdin: true, ClientMetadataURL: "https://app.example/c.json",
				Device: true, NoBrowser: true, CallbackHost: "localhost"}}, SignIn: wait}},
		{args: []string{"--login", "--callback-port", "8765", "http://127.0.0.1:7777/mcp", "tools/list"},
			want: CallOptions{DialectAuto: true, Target: "http://127.0.0.1:7777/mcp", Method: "tools/list",
				Login: CallLoginOptions{Enabled: true, LoginChoices: LoginChoices{CallbackHost: "127.0.0.1", CallbackPort: 8765}}, SignIn: wait}},
		{args: []string{"--no-wait", "--json", "http://127.0.0.1:7777/mcp", "tools/call", `{"name":"rally"}`},
			want: CallOptions{DialectAuto: true, Target: "http://127.0.0.1:7777/mcp", Method: "tools/call", Params: json.RawMessage(`{"name":"rally"}`), JSON: true,
				Login: noLogin, SignIn: client.SignInOptions{NoWait: true, WaitTimeout: client.DefaultSignInWait}}},
		{args: []string{"--wait-timeout", "30s", "--dialect", "acp", "--token-stdin", "stdio:agentauth serve --stdio", "whoami"},
			want: CallOptions{Target: "stdio:agentauth serve --stdio", Method: "whoami", TokenStdin: true, Dialect: wire.DialectACP,
				Login: noLogin, SignIn: client.SignInOptions{WaitTimeout: 30 * time.Second}}},
		{args: []string{"--rest", "--token-stdin", "http://127.0.0.1:7777", "rally_whoami", `{"a":1}`},
			want: CallOptions{DialectAuto: true, Target: "http://127.0.0.1:7777", Method: "rally_whoami", Params: json.RawMessage(`{"a":1}`), TokenStdin: true,
				REST: true, Login: noLogin, SignIn: wait}},
		{args: []string{"--rest", "ws://h", "whoami"}, wantCode: ExitUsage, wantErr: "--rest needs an http(s) TARGET"},
		{args: []string{"--rest", "http://h", "whoami", "[1]"}, wantCode: ExitUsage, wantErr: "with --rest, PARAMS_JSON must be a JSON object"},
		{args: []string{"--rest", "--login", "http://h", "whoami"}, wantCode: ExitUsage, wantErr: "--login works with MCP servers, not with --rest"},
		{args: []string{"--wait-timeout", "0s", "http://h/mcp", "tools/list"}, wantCode: ExitUsage, wantErr: "--wait-timeout must be positive"},
		{args: []string{"--no-wait", "--wait-timeout", "1m", "http://h/mcp", "tools/list"}, wantCode: ExitUsage, wantErr: "--no-wait and --wait-timeout exclude each other"},
		{args: []string{"ws://h"}, wantCode: ExitUsage, wantErr: "call expects TARGET METHOD [PARAMS_JSON]"},
		{args: []string{"ws://h", "echo", "1"}, wantCode: ExitUsage, wantErr: "PARAMS_JSON must be a JSON object or array"},
		{args: []string{"ws://h", "echo", "{"}, wantCode: ExitUsage, wantErr: "PARAMS_JSON must be a JSON object or array"},
		{args: []string{"--dialect", "mcp", "ws://h", "whoami"}, wantCode: ExitUsage, wantErr: "--dialect must be design, published or acp"},
		{args: []string{"--scheme", "dev", "ws://h", "whoami"}, wantCode: ExitUsage, wantErr: "--scheme needs --token-stdin"},
		{args: []string{"--set-auth-token", "ws://h", "whoami"}, wantCode: ExitUsage, wantErr: "--set-auth-token needs --token-stdin"},
		{args: []string{"--max-notifications", "2", "ws://h", "whoami"}, wantCode: ExitUsage, wantErr: "--max-notifications needs --watch"},
		{args: []string{"--login", "ws://h", "whoami"}, wantCode: ExitUsage, wantErr: "--login works with http(s) MCP servers only"},
		{args: []string{"--device", "https://mcp.example/mcp", "tools/list"}, wantCode: ExitUsage, wantErr: "--device needs --login"},
		{args: []string{"--client-id", "app", "http://127.0.0.1:1/mcp", "tools/list"}, wantCode: ExitUsage, wantErr: "--client-id needs --login"},
		{args: []string{"--scope", "a", "http://127.0.0.1:1/mcp", "tools/list"}, wantCode: ExitUsage, wantErr: "--scope needs --login"},
		{args: []string{"--login", "--client-secret-stdin", "http://127.0.0.1:1/mcp", "tools/list"}, wantCode: ExitUsage,
			wantErr: "--client-secret-stdin needs --client-id"},
		{args: []string{"--login", "--callback-host", "0.0.0.0", "http://127.0.0.1:1/mcp", "tools/list"}, wantCode: ExitUsage,
			wantErr: "--callback-host must be"},
		{args: []string{"--login", "--token-stdin", "http://127.0.0.1:1/mcp", "tools/list"}, wantCode: ExitUsage,
			wantErr: "--login and --token-stdin exclude each other"},
		{args: []string{"--watch", "https://mcp.example/mcp", "tools/list"}, wantCode: ExitUsage, wantErr: "are for agent hosts"},
		{args: []string{"--dialect", "published", "http://127.0.0.1:1/mcp", "tools/list"}, wantCode: ExitUsage, wantErr: "are for agent hosts"},
		{args: []string{"http://127.0.0.1:1/mcp", "initialize", "{}"}, wantCode: ExitUsage, wantErr: "give no PARAMS_JSON to initialize"},
		{args: []string{"mcp.example", "tools/list"}, wantCode: ExitUsage, wantErr: `unsupported target "mcp.example"`},
		{args: []string{"--bogus", "ws://h", "whoami"}, wantCode: ExitUsage, wantErr: "flag provided but not defined: -bogus"},
	}, callCommand, func(f *Factory, o *CallOptions) bool {
		ok := o.IO == f.IO && o.Client == f.Client()
		o.IO, o.Client = nil, nil
		return ok
	}, cmpopts.IgnoreUnexported(LoginChoices{}))
}
