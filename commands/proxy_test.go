package commands

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestProxyFlags(t *testing.T) {
	checkFlags(t, []flagCase[ProxyOptions]{
		{name: "defaults", args: []string{"https://mcp.example/mcp"},
			want: ProxyOptions{Target: "https://mcp.example/mcp", Transport: "http-first", Header: http.Header{},
				Login: LoginChoices{CallbackHost: "127.0.0.1"}}},
		{name: "every flag",
			args: []string{"--transport", "sse-only", "--header", "X-Api-Key: k1", "--header", "X-Tenant:t", "--allow-resource", "https://api.example/",
				"--device", "--scope", "a", "--client-id", "cid", "--client-metadata-url", "https://app.example/client.json",
				"--no-browser", "--callback-host", "localhost", "--dpop", "https://mcp.example/sse"},
			want: ProxyOptions{Target: "https://mcp.example/sse", Transport: "sse-only",
				Header:         http.Header{"X-Api-Key": {"k1"}, "X-Tenant": {"t"}},
				AllowResources: []string{"https://api.example/"},
				Login: LoginChoices{Device: true, Scopes: []string{"a"}, ClientID: "cid", ClientMetadataURL: "https://app.example/client.json",
					NoBrowser: true, CallbackHost: "localhost", DPoP: true}}},
		{args: []string{"--callback-port", "8765", "http://127.0.0.1:1/mcp"},
			want: ProxyOptions{Target: "http://127.0.0.1:1/mcp", Transport: "http-first", Header: http.Header{},
				Login: LoginChoices{CallbackHost: "127.0.0.1", CallbackPort: 8765}}},
		{args: []string{"ws://127.0.0.1:1"}, wantCode: ExitUsage, wantErr: "proxy needs an http or https MCP server URL"},
		{args: []string{}, wantCode: ExitUsage, wantErr: "proxy expects TARGET"},
		{args: []string{"--transport", "websocket", "https://h/mcp"}, wantCode: ExitUsage, wantErr: "--transport must be one of http-first, sse-first, http-only, sse-only"},
		{args: []string{"--header", "NoColon", "https://h/mcp"}, wantCode: ExitUsage, wantErr: "--header must be NAME:VALUE"},
		{args: []string{"--header", "Authorization: Bearer x", "https://h/mcp"}, wantCode: ExitUsage, wantErr: "--header cannot set Authorization"},
		{args: []string{"--header", "mcp-session-id: x", "https://h/mcp"}, wantCode: ExitUsage, wantErr: "--header cannot set Mcp-Session-Id"},
		{args: []string{"--client-secret-stdin", "--client-id", "c", "https://h/mcp"}, wantCode: ExitUsage, wantErr: "client-secret-stdin"},
		{args: []string{"--device", "--callback-port", "1", "https://h/mcp"}, wantCode: ExitUsage, wantErr: "--callback-port does not apply to --device"},
		{args: []string{"--allow-resource", "ftp://x", "https://h/mcp"}, wantCode: ExitUsage, wantErr: "--allow-resource must be an http(s) URL"},
		{args: []string{"--listen", "127.0.0.1:0", "--addr-file", "a", "--url-file", "u", "https://h/mcp"},
			want: ProxyOptions{Target: "https://h/mcp", Transport: "http-first", Header: http.Header{}, Listen: "127.0.0.1:0", AddrFile: "a", URLFile: "u",
				Login: LoginChoices{CallbackHost: "127.0.0.1"}}},
		{args: []string{"--url-file", "u", "https://h/mcp"}, wantCode: ExitUsage, wantErr: "--url-file needs --listen"},
	}, proxyCommand, func(f *Factory, o *ProxyOptions) bool {
		ok := o.IO == f.IO && o.Client != nil
		o.IO, o.Client = nil, nil
		return ok
	}, cmpopts.IgnoreUnexported(LoginChoices{}))
}
