package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/testprog/agents"
	"github.com/agentauth/agentauth/internal/testprog/ahp"
	"github.com/agentauth/agentauth/internal/testprog/browser"
	"github.com/agentauth/agentauth/internal/testprog/cli"
	"github.com/agentauth/agentauth/internal/testprog/devserve"
	"github.com/agentauth/agentauth/internal/testprog/gateway"
	"github.com/agentauth/agentauth/internal/testprog/github"
	"github.com/agentauth/agentauth/internal/testprog/gosdk"
	"github.com/agentauth/agentauth/internal/testprog/hostile"
	"github.com/agentauth/agentauth/internal/testprog/machine"
	"github.com/agentauth/agentauth/internal/testprog/mcp"
	"github.com/agentauth/agentauth/internal/testprog/ops"
	"github.com/agentauth/agentauth/internal/testprog/proxy"
	"github.com/agentauth/agentauth/internal/testprog/replicas"
	"github.com/agentauth/agentauth/internal/testprog/signin"
	"github.com/agentauth/agentauth/internal/testprog/upstream"

	"github.com/agentauth/agentauth/commands"
	"github.com/agentauth/agentauth/internal/testprog/newcomer"
	"github.com/rogpeppe/go-internal/testscript"
)

// scriptPrograms are the programs testscript puts on PATH for `exec`; the
// test programs of internal/testprog add theirs in init below.
var scriptPrograms = map[string]func(){
	"agentauth": func() { os.Exit(commands.Main()) },
	// browser-fetch URL is a $BROWSER for tests: it GETs the URL and follows
	// redirects (an auto-approving authorization server redirects straight
	// to the loopback callback), failing on a non-2xx final status.
	"browser-fetch": browserFetch,
	// xdg-open URL is the platform opener of a Linux desktop, for the
	// scripts that set $DISPLAY: it does what browser-fetch does.
	"xdg-open": browserFetch,
}

// scriptCmds are the custom script commands; internal/testprog adds more in init below.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"waitfile": waitFile,
	"addrenv":  addrEnv,
}

// testprogs are the packages of test programs (internal/testprog), each
// with its Programs and its script commands, when it has them.
var testprogs = []struct {
	programs func() map[string]func()
	cmds     func() map[string]func(ts *testscript.TestScript, neg bool, args []string)
}{
	{agents.Programs, agents.Cmds},
	{ahp.Programs, ahp.Cmds},
	{cli.Programs, cli.Cmds},
	{devserve.Programs, devserve.Cmds},
	{gateway.Programs, gateway.Cmds},
	{github.Programs, github.Cmds},
	{gosdk.Programs, nil},
	{hostile.Programs, hostile.Cmds},
	{machine.Programs, machine.Cmds},
	{mcp.Programs, mcp.Cmds},
	{ops.Programs, ops.Cmds},
	{proxy.Programs, nil},
	{replicas.Programs, replicas.Cmds},
	{signin.Programs, signin.Cmds},
	{nil, browser.Cmds},
	{upstream.Programs, nil},
	{newcomer.Programs, newcomer.Cmds},
}

func init() {
	for _, p := range testprogs {
		if p.programs != nil {
			register(scriptPrograms, p.programs())
		}
		if p.cmds != nil {
			register(scriptCmds, p.cmds())
		}
	}
}

// register adds each of what to into, refusing a name that is there
// already: one program or command would silently replace the other.
func register[F any](into, what map[string]F) {
	for name, f := range what {
		if _, dup := into[name]; dup {
			panic("testscript: " + name + " is registered twice")
		}
		into[name] = f
	}
}

func TestMain(m *testing.M) {
	testscript.Main(m, scriptPrograms)
}

func browserFetch() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: browser-fetch URL")
		os.Exit(2)
	}
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser-fetch:", err)
		os.Exit(1)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fmt.Fprintln(os.Stderr, "browser-fetch: final status", resp.Status)
		os.Exit(1)
	}
}

// TestScripts runs the end-to-end suite in testdata/script. Each script gets
// its own HOME and config dir under $WORK and the file credential store.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("AGENTAUTH_CONFIG_DIR", filepath.Join(env.WorkDir, "config"))
			env.Setenv("AGENTAUTH_STORE", "file")
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds:      scriptCmds,
		Condition: scriptCondition,
	})
}

// scriptCondition answers the custom script conditions: [oidc] (package
// signin) and [chromium] (package browser).
func scriptCondition(cond string) (bool, error) {
	if cond == "chromium" {
		return browser.Condition(cond)
	}
	return signin.Condition(cond)
}

// waitFile waits until a file exists and is non-empty (a server's address
// file), polling; it fails after 30 s. Usage: waitfile FILE
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("%s", fmt.Sprintf("timed out waiting for %s", args[0]))
}

// addrEnv sets an environment variable to a file's content without
// surrounding whitespace (a server's address file). Usage: addrenv VAR FILE
func addrEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: addrenv VAR FILE")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
}
