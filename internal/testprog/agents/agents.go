// Package agents holds the test programs of the ACP client's scripts
// (testdata/script/acp_*.txtar): an ACP agent with every auth method type
// that starts a helper process of its own, and the script command that
// checks that no process of an agent outlives agentauth. It is imported by
// main_test.go only.
package agents

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/rogpeppe/go-internal/testscript"
)

// Programs are the programs testscript puts on PATH.
func Programs() map[string]func() {
	return map[string]func(){"acp-slow-agent": slowAgentMain, "acp-meta-agent": metaAgentMain, "ahp-versioned-host": ahpVersionedHostMain}
}

// Cmds are the custom script commands.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){"pidsgone": pidsGone}
}

// slowAgentMain is an ACP agent shaped like the ACP schema 1.7.0 and the
// agents on npm: it starts a helper (a grandchild of agentauth, as
// gemini-cli's and codex-acp's native helpers are) and writes both pids
// to --pids; its methods are "browser" (agent: prints a sign-in URL on
// stdout inside escape sequences, as gemini-cli does, and never answers),
// "key" (env_var SLOW_AGENT_KEY; authenticate fails with the reason in
// data, as codex-acp does) and "term" (terminal, offered only to a client
// with clientCapabilities.auth.terminal: --login writes ./logged-in). It
// advertises auth.status (ACP RFD get-auth-state) and logout, which
// removes ./logged-in. With $SLOW_AGENT_V2 set it answers protocol
// version 2 and takes ACP's draft auth/login and auth/logout instead of
// authenticate and logout.
func slowAgentMain() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--helper" {
		time.Sleep(time.Hour)
		return
	}
	pids := ""
	if len(args) >= 2 && args[0] == "--pids" {
		pids, args = args[1], args[2:]
	}
	if len(args) > 0 && args[0] == "--login" {
		fmt.Println("Signed in from the terminal.")
		os.WriteFile("logged-in", []byte("yes"), 0o600)
		return
	}
	helper := exec.Command(os.Args[0], "--helper")
	if err := helper.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "slow agent:", err)
		os.Exit(1)
	}
	if pids != "" {
		os.WriteFile(pids+".tmp", []byte(fmt.Sprintf("%d %d\n", os.Getpid(), helper.Process.Pid)), 0o600)
		os.Rename(pids+".tmp", pids)
	}
	fmt.Fprintln(os.Stderr, "slow agent: started helper")
	send := progutil.NewLineWriter(os.Stdout).Send
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
		if v2 := os.Getenv("SLOW_AGENT_V2") != ""; v2 {
			switch m.Method {
			case "authenticate", "logout":
				m.Method = "unknown in v2"
			case "auth/login":
				m.Method = "authenticate"
			case "auth/logout":
				m.Method = "logout"
			}
		}
		switch m.Method {
		case "initialize":
			methods := []any{
				map[string]any{"id": "browser", "name": "Sign in with a browser"},
				map[string]any{"id": "key", "name": "Use SLOW_AGENT_KEY", "type": "env_var", "vars": []any{map[string]any{"name": "SLOW_AGENT_KEY"}}},
			}
			caps, _ := m.Params["clientCapabilities"].(map[string]any)
			if auth, _ := caps["auth"].(map[string]any); auth["terminal"] == true {
				methods = append(methods, map[string]any{"id": "term", "name": "Log in from the terminal", "type": "terminal", "args": []any{"--login"}})
			}
			// clientInfo is optional; when sent, ACP's Implementation
			// requires its version (gemini-cli refuses it otherwise).
			info, sent := m.Params["clientInfo"].(map[string]any)
			if _, ok := info["version"].(string); sent && !ok {
				send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32602, "message": "Invalid params", "data": "clientInfo.version: Required"}})
				continue
			}
			version := 1
			if os.Getenv("SLOW_AGENT_V2") != "" {
				version = 2 // ACP's draft: auth/login and auth/logout
			}
			send(map[string]any{"id": m.ID, "result": map[string]any{"protocolVersion": version,
				"agentCapabilities": map[string]any{"auth": map[string]any{"status": true, "logout": map[string]any{}}},
				"agentInfo":         map[string]any{"name": "acp-slow-agent", "version": "1.0.0"},
				"authMethods":       methods}})
		case "logout":
			os.Remove("logged-in")
			send(map[string]any{"id": m.ID, "result": map[string]any{}})
		case "auth/status":
			_, err := os.Stat("logged-in")
			ok := err == nil || os.Getenv("SLOW_AGENT_KEY") != ""
			send(map[string]any{"id": m.ID, "result": map[string]any{"authenticated": ok, "message": map[bool]string{true: "signed in", false: "no credentials"}[ok]}})
		case "authenticate":
			switch m.Params["methodId"] {
			case "browser":
				fmt.Print("\x1b[?1049h\x1b[2J\x1b[HPlease visit https://example.com/login\n")
				fmt.Fprintln(os.Stderr, "slow agent: waiting for the browser")
			case "key":
				if os.Getenv("SLOW_AGENT_KEY") == "" {
					send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32603, "message": "Internal error", "data": "SLOW_AGENT_KEY is not set"}})
					continue
				}
				send(map[string]any{"id": m.ID, "result": map[string]any{}})
			default:
				send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32602, "message": "Invalid params", "data": "unsupported authentication method"}})
			}
		default:
			send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
		}
	}
}

// pidsGone FILE checks that no process whose pid FILE lists is alive
// (gone, or a zombie waiting to be reaped), polling up to 5 s for the
// signals agentauth sent to be delivered.
func pidsGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pidsgone FILE")
	}
	var alive []string
	for deadline := time.Now().Add(5 * time.Second); ; {
		alive = alive[:0]
		for _, f := range strings.Fields(ts.ReadFile(args[0])) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				ts.Fatalf("bad pid %q in %s", f, args[0])
			}
			if running(pid) {
				alive = append(alive, f)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(alive) > 0 {
		ts.Fatalf("processes still running: %s", strings.Join(alive, " "))
	}
}

// running reports whether pid is a live process (not a zombie).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
