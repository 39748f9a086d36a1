// Package ahp holds test programs for the testscripts: the Agent Host Protocol and ACP fakes: a host as VS Code's AHP server ships it (one and two schemes), an ACP agent, a VS Code-like host, and the sighup script command.
// It is test support (see internal/testprog); only main_test.go imports it.
package ahp

import "github.com/rogpeppe/go-internal/testscript"

// programs and cmds are filled by the init functions of this package's files.
var (
	programs = map[string]func(){}
	cmds     = map[string]func(ts *testscript.TestScript, neg bool, args []string){}
)

// Programs are the programs testscript puts on PATH for exec, by name.
func Programs() map[string]func() { return programs }

// Cmds are the custom script commands, by name.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) { return cmds }
