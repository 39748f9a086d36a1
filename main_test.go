package main

import (
	"path/filepath"
	"testing"

	"github.com/agentauth/agentauth/internal/testprog/agents"
	"github.com/agentauth/agentauth/internal/testprog/ahp"
	"github.com/agentauth/agentauth/internal/testprog/browser"
	"github.com/agentauth/agentauth/internal/testprog/cli"
	"github.com/agentauth/agentauth/internal/testprog/devserve"
	"github.com/agentauth/agentauth/internal/testprog/gateway"
	"github.com/agentauth/agentauth/internal/testprog/github"
	"github.com/agentauth/agentauth/internal/testprog/gosdk"
	"github.com/agentauth/agentauth/internal/testprog/hostile"
	"github.com/agentauth/agentauth/internal/testprog/hydra"
	"github.com/agentauth/agentauth/internal/testprog/machine"
	"github.com/agentauth/agentauth/internal/testprog/mcp"
	"github.com/agentauth/agentauth/internal/testprog/ops"
	"github.com/agentauth/agentauth/internal/testprog/proxy"
	"github.com/agentauth/agentauth/internal/testprog/replicas"
	"github.com/agentauth/agentauth/internal/testprog/signin"
	"github.com/agentauth/agentauth/internal/testprog/upstream"

	"github.com/agentauth/agentauth/agentauthtest/script"
	"github.com/agentauth/agentauth/internal/testprog/newcomer"
	"github.com/rogpeppe/go-internal/testscript"
)

// scriptPrograms are the programs testscript puts on PATH for `exec`:
// those of package script (agentauth, browser-fetch), which other
// modules' suites use too, xdg-open, and the test programs of
// internal/testprog, added in init below.
var scriptPrograms = map[string]func(){
	// xdg-open URL is the platform opener of a Linux desktop, for the
	// scripts that set $DISPLAY: it does what browser-fetch does.
	"xdg-open": script.Programs()["browser-fetch"],
}

// scriptCmds are the custom script commands: package script's (waitfile,
// addrenv, jwtpayload, nosecrets) and internal/testprog's, added in init
// below.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){}

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
	{hydra.Programs, hydra.Cmds},
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
	register(scriptPrograms, script.Programs())
	register(scriptCmds, script.Cmds())
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

// TestScripts runs the end-to-end suite in testdata/script. Each script gets
// its own HOME and config dir under $WORK and the file credential store
// (script.Setup).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup:               script.Setup,
		Cmds:                scriptCmds,
		Condition:           scriptCondition,
	})
}

// scriptCondition answers the custom script conditions: [oidc] (package
// signin), [chromium] (package browser) and [hydra] (package hydra).
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "chromium":
		return browser.Condition(cond)
	case "hydra":
		return hydra.Condition(cond)
	}
	return signin.Condition(cond)
}
