// Package cli holds test programs for the testscripts: programs around the CLI: a pty runner, credential seeding and editing, an exit-code probe, agentauth with a failing OS keyring, a consent-page browser, and the script commands portenv, jwtpayload, registerclient and nosecrets.
// It is test support (see internal/testprog); only main_test.go imports it.
package cli

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
