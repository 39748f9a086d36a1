package ahp

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/rogpeppe/go-internal/testscript"
)

// The ahp_*.txtar scripts' helper: ahp-shipped-host, a fake agent host
// over stdio built strictly from the shipped Agent Host Protocol's shapes
// (microsoft/agent-host-protocol types/common/commands.ts @
// 2f81aadbe141cfed8d69ffdd6c4cb22037d5b7b6, types/channels-root/state.ts
// @ f995c7b0922506412f04ca1683921cddea01bb9e, types/common/errors.ts @
// 5299191f6344eeed3341803593b8b50d9183bb20), never from agentauth's types:
// snapshots only for subscribed channels, authenticate answers {}, -32007
// carries {resources}, ping answers null.
//
// sighup WORD sends SIGHUP to the processes started in this script's
// directory whose command line holds WORD (Linux /proc; testscript's kill
// knows only INT and KILL).
func init() {
	programs["ahp-shipped-host"] = ahpShippedHostMain
	programs["acp-agent"] = acpAgentMain
	cmds["sighup"] = sigHup
}

// acpAgentMain is a fake ACP agent over stdio, built from the ACP schema's
// shapes (agentclientprotocol/agent-client-protocol; the SDK 2.4.0 types in
// testdata/acp): one auth method of each type, getAuthState, and
// authenticate {methodId} that succeeds for the agent-type method "oauth"
// and answers -32000 otherwise.
func acpAgentMain() {
	send := progutil.NewLineWriter(os.Stdout).Send
	authenticated := false
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var m struct {
			ID     any `json:"id"`
			Method string
			Params map[string]any
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case "initialize":
			send(map[string]any{"id": m.ID, "result": map[string]any{
				"protocolVersion":   1,
				"agentCapabilities": map[string]any{"auth": map[string]any{"logout": map[string]any{}}, "getAuthState": true},
				"agentInfo":         map[string]any{"name": "acp-agent", "version": "1"},
				"authMethods": []any{
					map[string]any{"id": "oauth", "name": "Sign in", "type": "agent"},
					map[string]any{"id": "api-key", "name": "API key", "type": "env_var", "varName": "ACP_AGENT_KEY", "link": "https://example.com/keys"},
					map[string]any{"id": "login", "name": "Terminal login", "type": "terminal", "args": []any{"--login"}},
				}}})
		case "getAuthState":
			send(map[string]any{"id": m.ID, "result": map[string]any{"authenticated": authenticated,
				"authMethods": []any{map[string]any{"authMethodId": "oauth", "authenticated": authenticated, "message": "not signed in"}}}})
		case "authenticate":
			if m.Params["methodId"] != "oauth" {
				send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32000, "message": fmt.Sprintf("Authentication required: method %v is not run by the agent", m.Params["methodId"])}})
				continue
			}
			authenticated = true
			send(map[string]any{"id": m.ID, "result": map[string]any{}})
		default:
			send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
		}
	}
}

func sigHup(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sighup WORD")
	}
	dir, _ := filepath.EvalSymlinks(ts.Getenv("WORK"))
	procs, _ := filepath.Glob("/proc/[0-9]*")
	sent := 0
	for _, p := range procs {
		cwd, err := os.Readlink(p + "/cwd")
		if err != nil || cwd != dir {
			continue
		}
		cmdline, _ := os.ReadFile(p + "/cmdline")
		if !strings.Contains(string(cmdline), args[0]) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		ts.Check(syscall.Kill(pid, syscall.SIGHUP))
		sent++
	}
	if sent == 0 {
		ts.Fatalf("no process in %s runs %q", dir, args[0])
	}
}

func ahpShippedHostMain() {
	ignoreInitial := flag.Bool("ignore-initial-subscriptions", false, "answer initialize with no snapshot, so that clients must subscribe")
	as := flag.String("as", "https://github.com/login/oauth", "the authorization server the protected resource names")
	expire := flag.Bool("expire-after-auth", false, `push auth/required "expired" right after a successful authenticate`)
	add := flag.Bool("add-after-auth", false, "after a successful authenticate, add a required protected resource (a root/agentsChanged action)")
	flag.Parse()
	resource := map[string]any{
		"resource":              "https://api.github.com",
		"resource_name":         "GitHub Copilot",
		"authorization_servers": []any{*as},
		"scopes_supported":      []any{"read:user", "user:email"},
	}
	root := map[string]any{"resource": "ahp-root://", "fromSeq": 0, "state": map[string]any{"agents": []any{map[string]any{
		"provider": "copilot", "displayName": "GitHub Copilot", "description": "AI pair programmer", "models": []any{},
		"protectedResources": []any{resource},
	}}}}
	f := &shippedFake{root: root, ignoreInitial: *ignoreInitial, LineWriter: progutil.NewLineWriter(os.Stdout)}
	send, fail := f.Send, f.Fail
	authenticated := false
	f.serve(func(id any, method string, p map[string]any) {
		switch {
		case method == "authenticate" && p["resource"] != "https://api.github.com":
			fail(id, -32602, fmt.Sprintf("unknown resource %v", p["resource"]), nil)
		case method == "authenticate" && p["token"] != "gho_good":
			fail(id, -32007, "Invalid token", nil)
		case method == "authenticate":
			authenticated = true
			send(map[string]any{"id": id, "result": map[string]any{}})
			if *add {
				second := map[string]any{"resource": "https://api.example.com", "authorization_servers": []any{*as}}
				agent := map[string]any{"provider": "copilot", "displayName": "GitHub Copilot", "description": "AI pair programmer", "models": []any{},
					"protectedResources": []any{resource, second}}
				send(map[string]any{"method": "action", "params": map[string]any{"channel": "ahp-root://", "serverSeq": 1,
					"action": map[string]any{"type": "root/agentsChanged", "agents": []any{agent}}}})
			}
			if *expire {
				authenticated = false
				send(map[string]any{"method": "auth/required", "params": map[string]any{"channel": "ahp-root://", "resource": resource, "reason": "expired"}})
			}
		case !authenticated:
			fail(id, -32007, "Authentication required for GitHub Copilot", map[string]any{"resources": []any{resource}})
		default:
			send(map[string]any{"id": id, "result": map[string]any{"method": method}})
		}
	})
}

// shippedFake is what the fake shipped agent hosts (ahp-shipped-host,
// ahp-shipped-two) share: the protocol loop of types/common/commands.ts,
// one JSON-RPC message a line on stdio, answering ping, initialize (0.9.0
// only, -32601 once initialized; the root snapshot when subscribed
// initially, unless ignoreInitial), -32601 before initialize and subscribe
// to the root channel; handle answers every other request.
type shippedFake struct {
	root                 map[string]any
	ignoreInitial        bool
	*progutil.LineWriter // on stdout
}

func (f *shippedFake) serve(handle func(id any, method string, p map[string]any)) {
	initialized := false
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var m struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		var p map[string]any
		json.Unmarshal(m.Params, &p)
		switch {
		case m.Method == "ping":
			f.Send(map[string]any{"id": m.ID, "result": nil})
		case m.Method == "initialize" && initialized:
			f.Fail(m.ID, -32601, "already initialized", nil)
		case m.Method == "initialize":
			versions, _ := p["protocolVersions"].([]any)
			if !slices.Contains(versions, any("0.9.0")) {
				f.Fail(m.ID, -32005, "unsupported protocol version", map[string]any{"supportedVersions": []any{"^0.9.0"}})
				continue
			}
			initialized = true
			snaps := []any{}
			if subs, _ := p["initialSubscriptions"].([]any); slices.Contains(subs, any("ahp-root://")) && !f.ignoreInitial {
				snaps = append(snaps, f.root)
			}
			f.Send(map[string]any{"id": m.ID, "result": map[string]any{"protocolVersion": "0.9.0", "serverSeq": 0, "snapshots": snaps}})
		case !initialized:
			f.Fail(m.ID, -32601, "not initialized", nil)
		case m.Method == "subscribe" && p["channel"] == "ahp-root://":
			f.Send(map[string]any{"id": m.ID, "result": map[string]any{"snapshot": f.root}})
		default:
			handle(m.ID, m.Method, p)
		}
	}
}
