package agents

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
)

// metaAgentMain is an ACP agent shaped like the npm agents that keep
// their login command in _meta["terminal-auth"] (GitHub Copilot CLI
// 1.0.102, opencode 1.18.33, auggie 0.36.0) and report no auth state:
// session/new is its only answer, -32000 until ./logged-in exists (or
// $META_KEY is set). -methods says what it advertises:
//
//	one    "login" (agent, with _meta["terminal-auth"] {command
//	       acp-meta-agent, args [--login]} when the client declares
//	       clientCapabilities._meta["terminal-auth"]); authenticate is
//	       -32000, as Copilot answers
//	two    "key" (agent; authenticate is -32603 with the reason in data
//	       until $META_KEY is set, as qwen-code answers) and "login"
//	none   nothing, and session/new works: no sign-in is needed
//	broken "login" (agent, no command), to which authenticate answers {}
//	       without signing in, and session/new fails with -32603, as
//	       opencode's does here
//	mute   nothing: it never answers, not even initialize
//	raw    "login", whose command (--raw-login FILE) puts the terminal
//	       in raw mode, hides the cursor, starts a helper, writes "pid
//	       helper pgid tpgid" to FILE (-pids) and waits for ever
func metaAgentMain() {
	if len(os.Args) > 1 && os.Args[1] == "--helper" {
		time.Sleep(time.Hour)
	}
	if len(os.Args) > 1 && os.Args[1] == "--login" {
		fmt.Println("Signed in.")
		os.WriteFile("logged-in", []byte("yes"), 0o600)
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "--raw-login" {
		rawLogin(os.Args[2])
		return
	}
	methods := flag.String("methods", "one", "one, two, none, broken, mute or raw")
	pids := flag.String("pids", "", "the file --raw-login writes its pids to")
	flag.Parse()
	lw := progutil.NewLineWriter(os.Stdout)
	send, fail := lw.Send, lw.Fail
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var m struct {
			ID     any
			Method string
			Params map[string]any
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		if *methods == "mute" {
			continue
		}
		switch m.Method {
		case "initialize":
			caps, _ := m.Params["clientCapabilities"].(map[string]any)
			meta, _ := caps["_meta"].(map[string]any)
			login := map[string]any{"id": "login", "name": "Log in with Meta", "description": "Run `acp-meta-agent --login` in the terminal"}
			if meta["terminal-auth"] == true && *methods != "broken" {
				args := []any{"--login"}
				if *methods == "raw" {
					args = []any{"--raw-login", *pids}
				}
				login["_meta"] = map[string]any{"terminal-auth": map[string]any{"command": "acp-meta-agent", "args": args, "label": "Meta Login"}}
			}
			list := []any{login}
			switch *methods {
			case "two":
				list = []any{map[string]any{"id": "key", "name": "Use META_KEY", "description": "Requires setting the `META_KEY` environment variable"}, login}
			case "none":
				list = []any{}
			}
			send(map[string]any{"id": m.ID, "result": map[string]any{"protocolVersion": 1,
				"agentInfo": map[string]any{"name": "acp-meta-agent", "version": "1.0.0"}, "agentCapabilities": map[string]any{}, "authMethods": list}})
		case "authenticate":
			switch {
			case *methods == "broken":
				send(map[string]any{"id": m.ID, "result": map[string]any{}})
			case m.Params["methodId"] == "key" && os.Getenv("META_KEY") == "":
				fail(m.ID, -32603, "Internal error", map[string]any{"details": "Missing API key: set the environment variable META_KEY"})
			case m.Params["methodId"] == "key":
				send(map[string]any{"id": m.ID, "result": map[string]any{}})
			default:
				fail(m.ID, -32000, "Authentication required", nil)
			}
		case "session/new":
			_, err := os.Stat("logged-in")
			switch {
			case *methods == "broken":
				fail(m.ID, -32603, "Internal error: service failure", map[string]any{"service": "directory"})
			case err == nil || os.Getenv("META_KEY") != "" || *methods == "none":
				send(map[string]any{"id": m.ID, "result": map[string]any{"sessionId": "s1"}})
			default:
				fail(m.ID, -32000, "Authentication required", nil)
			}
		default:
			fail(m.ID, -32601, "Method not found", nil)
		}
	}
}
