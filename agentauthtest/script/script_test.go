package script_test

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentauth/agentauth/agentauthtest/script"
)

func TestMain(m *testing.M) {
	testscript.Main(m, script.Programs())
}

// TestScripts runs testdata/script with the package's Setup and Cmds, as
// another module's suite would.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup:               script.Setup,
		Cmds:                script.Cmds(),
	})
}
