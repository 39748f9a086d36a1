// Command gwclient is the official MCP Go SDK's client using a backend's
// tools, resources, prompts, sampling, elicitation and progress through
// agentauth serve's gateway (run by testdata/gateway/run.sh).
//
//	gwclient -token-file FILE -backend everything|conformance|modern [-protocol-version V] URL
//	gwclient -token-file FILE -echo-burst N -tag TAG [-protocol-version V] URL
//
// everything is @modelcontextprotocol/server-everything (stdio behind
// serve), conformance the Go SDK's conformance everything-server
// (Streamable HTTP behind serve), modern the TypeScript SDK v2's server
// of MCP 2026-07-28 only (testdata/proxy/modern-server.mjs, Streamable
// HTTP behind serve, which bridges a client of an earlier revision to
// it). Prints "ok   CHECK" per check; on a
// failure "FAIL CHECK: what it saw" and exits 1. -protocol-version asks
// for that MCP revision (default: the SDK's newest, 2026-07-28, which it
// falls back from when the server lacks it). -echo-burst calls
// server-everything's echo N times at once with "TAG i" and checks that
// each call got its own text back (two of these at once through a shared
// stdio process show that callers get only their own answers).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

var failed bool

func check(name string, ok bool, seen any) {
	if ok {
		fmt.Println("ok   " + name)
		return
	}
	fmt.Printf("FAIL %s: %v\n", name, seen)
	failed = true
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func main() {
	tokenFile := flag.String("token-file", "", "the access token for serve")
	backend := flag.String("backend", "everything", "everything, conformance or modern")
	version := flag.String("protocol-version", "", "the MCP revision to ask for")
	burst := flag.Int("echo-burst", 0, "only call echo this many times at once")
	tag := flag.String("tag", "gwclient", "the text -echo-burst sends")
	flag.Parse()
	tok, err := os.ReadFile(*tokenFile)
	if err != nil || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gwclient -token-file FILE -backend everything|conformance|modern URL")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var progress atomic.Int32
	c := mcp.NewClient(&mcp.Implementation{Name: "agentauth-gateway-check", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "check-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled through serve"}}, nil
		},
		ElicitationHandler:          elicit,
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	var so *mcp.ClientSessionOptions
	if *version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: *version}
	}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: flag.Arg(0), HTTPClient: &http.Client{Transport: bearer{strings.TrimSpace(string(tok))}}}, so)
	check("the Go SDK client initializes through serve", err == nil, err)
	if err != nil {
		os.Exit(1)
	}
	defer cs.Close()
	fmt.Println("     (MCP " + cs.InitializeResult().ProtocolVersion + ")")
	if *burst > 0 {
		echoBurst(ctx, cs, *burst, *tag)
		if failed {
			os.Exit(1)
		}
		return
	}
	tools, err := cs.ListTools(ctx, nil)
	var names []string
	if err == nil {
		for _, t := range tools.Tools {
			names = append(names, t.Name)
		}
	}
	switch *backend {
	case "everything":
		checkEverything(ctx, cs, names, &progress)
	case "conformance":
		checkConformance(ctx, cs, names, &progress)
	case "modern":
		checkModern(ctx, cs, names, *version)
	default:
		fmt.Fprintln(os.Stderr, "gwclient: -backend is everything, conformance or modern")
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// elicit accepts every elicitation, filling each required field with a
// value of its type (format and enum honoured); optional fields stay empty.
func elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	content := map[string]any{}
	if req.Params.RequestedSchema != nil {
		if s, ok := req.Params.RequestedSchema.(map[string]any); ok {
			required, _ := s["required"].([]any)
			if props, ok := s["properties"].(map[string]any); ok {
				for name, p := range props {
					if !slices.Contains(required, any(name)) {
						continue // optional fields stay empty
					}
					p := p.(map[string]any)
					switch p["type"] {
					case "string":
						content[name] = map[string]string{"email": "ada@example.com", "uri": "https://example.com/", "date": "2026-01-02", "date-time": "2026-01-02T03:04:05Z"}[fmt.Sprint(p["format"])]
						if enum, ok := p["enum"].([]any); ok && len(enum) > 0 {
							content[name] = enum[0]
						} else if content[name] == "" {
							content[name] = "Ada"
						}
					case "boolean":
						content[name] = true
					case "number", "integer":
						content[name] = 7
					}
				}
			}
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// echoBurst calls echo n times at once with "TAG i" and checks that each
// call got its own text back.
func echoBurst(ctx context.Context, cs *mcp.ClientSession, n int, tag string) {
	var wg sync.WaitGroup
	var wrong atomic.Int32
	var seen sync.Map
	for i := range n {
		wg.Go(func() {
			want := fmt.Sprintf("%s %d", tag, i)
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": want}})
			if err != nil {
				wrong.Add(1)
				seen.Store(want, err.Error())
			} else if got := text(r); !strings.HasSuffix(got, ": "+want) {
				wrong.Add(1)
				seen.Store(want, got)
			}
		})
	}
	wg.Wait()
	var bad []string
	seen.Range(func(k, v any) bool { bad = append(bad, fmt.Sprintf("%v -> %v", k, v)); return len(bad) < 5 })
	check(fmt.Sprintf("%d echo calls at once, each answered with its own text (%s)", n, tag), wrong.Load() == 0, bad)
}

// checkEverything uses server-everything's tools, resources, prompts,
// sampling, elicitation, progress and environment through serve.
func checkEverything(ctx context.Context, cs *mcp.ClientSession, names []string, progress *atomic.Int32) {
	check("tools/list shows the backend's tools", slices.Contains(names, "echo") && slices.Contains(names, "trigger-sampling-request"), names)
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}})
	check("tools/call echo", err == nil && strings.Contains(text(r), "hello"), err)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": 5}})
	check("bad arguments are -32602 from serve", err != nil && strings.Contains(err.Error(), "do not match its inputSchema"), err)
	res, err := cs.ListResources(ctx, nil)
	check("resources/list", err == nil && len(res.Resources) > 0, err)
	if err == nil && len(res.Resources) > 0 {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI})
		check("resources/read", err == nil && len(rr.Contents) > 0, err)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Lisbon"}})
	check("prompts/get", err == nil && len(pr.Messages) > 0, err)
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": "hi", "maxTokens": 10}})
	check("sampling through serve", err == nil && strings.Contains(text(r), "sampled through serve"), fmt.Sprint(err, r))
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request"})
	check("elicitation through serve", err == nil && strings.Contains(text(r), "accept"), fmt.Sprint(err, text(r)))
	p := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 2}}
	p.SetProgressToken("gw-progress")
	r, err = cs.CallTool(ctx, p)
	check("progress notifications through serve", err == nil && progress.Load() >= 1, fmt.Sprint(err, progress.Load()))
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-env"})
	env := ""
	if err == nil {
		env = text(r)
	}
	check("the stdio backend's environment holds none of serve's", err == nil && !strings.Contains(env, "AGENTAUTH_GATEWAY_CHECK_SECRET"), env)
}

// checkConformance uses the conformance everything-server's tools,
// resource, prompt, sampling, elicitation and progress through serve.
func checkConformance(ctx context.Context, cs *mcp.ClientSession, names []string, progress *atomic.Int32) {
	check("tools/list shows the backend's tools", slices.Contains(names, "test_sampling") && slices.Contains(names, "test_simple_text"), names)
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
	check("tools/call", err == nil && text(r) != "", err)
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
	check("resources/read", err == nil && len(rr.Contents) > 0, err)
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_simple_prompt"})
	check("prompts/get", err == nil && len(pr.Messages) > 0, err)
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hi"}})
	check("sampling through serve", err == nil && strings.Contains(text(r), "sampled through serve"), fmt.Sprint(err, r))
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "name?"}})
	check("elicitation through serve", err == nil && strings.Contains(text(r), "accept"), fmt.Sprint(err, text(r)))
	p := &mcp.CallToolParams{Name: "test_tool_with_progress"}
	p.SetProgressToken("gw-progress")
	_, err = cs.CallTool(ctx, p)
	check("progress notifications through serve", err == nil && progress.Load() >= 1, fmt.Sprint(err, progress.Load()))
}

// checkModern uses the MCP 2026-07-28 server through serve's bridge;
// version is -protocol-version.
func checkModern(ctx context.Context, cs *mcp.ClientSession, names []string, version string) {
	check("tools/list shows the backend's tools", slices.Contains(names, "echo") && slices.Contains(names, "greet"), names)
	if version != "" {
		check("serve answers initialize with the revision asked for", cs.InitializeResult().ProtocolVersion == version, cs.InitializeResult().ProtocolVersion)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "bridged"}})
	check("tools/call echo", err == nil && text(r) == "bridged", fmt.Sprint(err, r))
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet"})
	check("an input request of the backend comes as elicitation and its answer goes back", err == nil && text(r) == "Hello, Ada!", fmt.Sprint(err, r))
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": 5}})
	check("bad arguments are -32602 from serve", err != nil && strings.Contains(err.Error(), "do not match its inputSchema"), err)
	if version != "" {
		// MCP 2026-07-28 has no ping; serve answers it for the bridged session.
		err = cs.Ping(ctx, nil)
		check("ping", err == nil, err)
	}
}
