// Package gateway holds the programs the gateway_*.txtar scripts run:
// rallymcp, an MCP server shaped like seed 004's Rally integration (MCP Go
// SDK, Streamable HTTP) that logs every header it gets and calls a legacy
// upstream API with the token serve gives it.
package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// Programs are this package's script programs.
func Programs() map[string]func() {
	return map[string]func(){"rallymcp": rallyMCPMain}
}

// Cmds are this package's script commands.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){"procsgone": procsGone}
}

// procsGone checks that no process whose pid is a line of FILE is alive
// (signal 0), waiting up to 10 s for them to go.
// Usage: procsgone FILE
func procsGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: procsgone FILE")
	}
	pids := strings.Fields(ts.ReadFile(args[0]))
	if len(pids) == 0 {
		ts.Fatalf("%s lists no pid", args[0])
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		pid, err := strconv.Atoi(p)
		if err != nil {
			ts.Fatalf("%s: %q is not a pid", args[0], p)
		}
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				ts.Fatalf("process %d is still running", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

type storyArgs struct {
	Title  string `json:"title" jsonschema:"the story's title"`
	Points int    `json:"points,omitempty" jsonschema:"story points, 0 or more"`
}

// rallyMCPMain serves an MCP server over Streamable HTTP at /mcp:
//
//	create_story {title, points}  "created story US<n>: TITLE"
//	get_story    {}               POSTs to -upstream's /api with the token
//	                              in the -token-header header and returns
//	                              its answer and the token's SHA-256 prefix
//	echo         {text}           the text
//
// Every request's headers go to -header-log as one JSON object per line
// (name: values), so scripts can show what serve passed on; every tool
// call is a line "tool NAME token=SHA8|none" in -call-log, and every
// bearer token the claims of its JWT payload ("assertion iss=… aud=…
// sub=… client_id=…", read without checking the signature).
// With -stdio it serves the same tools on stdin/stdout, plus crash (the
// process exits) and env {name} (whether a variable is set).
// Usage: rallymcp -addr-file FILE -header-log FILE -call-log FILE [-upstream URL] [-token-header NAME]
//
//	rallymcp -stdio [-pid-file FILE]
func rallyMCPMain() {
	fs := flag.NewFlagSet("rallymcp", flag.ExitOnError)
	addrFile := fs.String("addr-file", "", "write HOST:PORT to `FILE`")
	headerLog := fs.String("header-log", "", "log every request's headers to `FILE`")
	callLog := fs.String("call-log", "", "log every tool call to `FILE`")
	upstream := fs.String("upstream", "", "the legacy upstream's base `URL`")
	tokenHeader := fs.String("token-header", "X-Rally-Token", "the `HEADER` serve puts the upstream token in")
	stateless := fs.Bool("stateless", false, "keep no sessions")
	stdio := fs.Bool("stdio", false, "serve MCP on stdin/stdout instead (crash exits)")
	pidFile := fs.String("pid-file", "", "append the process id to `FILE`")
	fs.Parse(os.Args[1:])
	if *pidFile != "" {
		f, err := os.OpenFile(*pidFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}

	var mu sync.Mutex
	appendLine := func(path, line string) {
		if path == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return
		}
		fmt.Fprintln(f, line)
		f.Close()
	}
	tokenOf := func(h http.Header) (string, string) {
		tok := h.Get(*tokenHeader)
		if tok == "" {
			return "", "none"
		}
		sum := sha256.Sum256([]byte(tok))
		return tok, hex.EncodeToString(sum[:4])
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "rally-mcp", Version: "1.0.0"}, nil)
	n := 0
	mcp.AddTool(s, &mcp.Tool{Name: "create_story", Description: "Creates a Rally user story."}, func(ctx context.Context, req *mcp.CallToolRequest, a storyArgs) (*mcp.CallToolResult, any, error) {
		_, sum := tokenOf(req.Extra.Header)
		appendLine(*callLog, "tool create_story token="+sum)
		mu.Lock()
		n++
		id := n
		mu.Unlock()
		if a.Points < 0 {
			return text(fmt.Sprintf("points must be 0 or more, not %d", a.Points), true), nil, nil
		}
		return text(fmt.Sprintf("created story US%d: %s", id, a.Title), false), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "get_story", Description: "Reads the user's Rally workspace through the Rally API."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
		tok, sum := tokenOf(req.Extra.Header)
		appendLine(*callLog, "tool get_story token="+sum)
		if tok == "" || *upstream == "" {
			return text("no Rally token", true), nil, nil
		}
		hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(*upstream, "/")+"/api", bytes.NewReader([]byte("{}")))
		hreq.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(hreq)
		if err != nil {
			return text("Rally cannot be reached: "+err.Error(), true), nil, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return text(fmt.Sprintf("Rally answered %d: %s (token %s)", resp.StatusCode, bytes.TrimSpace(b), sum), resp.StatusCode != 200), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return text(a.Text, false), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits the process (stdio only)."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
		if *stdio {
			os.Exit(3)
		}
		return text("not on stdio", true), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Says whether the named environment variable is set."}, func(ctx context.Context, req *mcp.CallToolRequest, a struct {
		Name string `json:"name"`
	}) (*mcp.CallToolResult, any, error) {
		_, ok := os.LookupEnv(a.Name)
		return text(fmt.Sprintf("%s set: %v", a.Name, ok), false), nil, nil
	})
	if *stdio {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "rallymcp:", err)
			os.Exit(1)
		}
		return
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: *stateless})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := map[string][]string{}
		keys := make([]string, 0, len(r.Header))
		for k, v := range r.Header {
			m[k] = v
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b, _ := json.Marshal(m)
		appendLine(*headerLog, string(b))
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			// An identity assertion: its claims, read without checking
			// the signature (a log for the scripts, not a check).
			var claims struct {
				Aud      string `json:"aud"`
				Sub      string `json:"sub"`
				ClientID string `json:"client_id"`
				Iss      string `json:"iss"`
			}
			if parts := strings.Split(tok, "."); len(parts) == 3 {
				if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil && json.Unmarshal(payload, &claims) == nil {
					appendLine(*callLog, fmt.Sprintf("assertion iss=%s aud=%s sub=%s client_id=%s", claims.Iss, claims.Aud, claims.Sub, claims.ClientID))
				}
			}
		}
		h.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rallymcp:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	if *addrFile != "" {
		os.WriteFile(*addrFile, []byte(l.Addr().String()+"\n"), 0o600)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
}

func text(s string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}, IsError: isError}
}
