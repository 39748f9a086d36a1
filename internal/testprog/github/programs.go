// Package github holds test programs for the testscripts: fakegithub, a GitHub-like OAuth server (device flow, web flow, GHES and legacy modes).
// It is test support (see internal/testprog); only main_test.go imports it.
package github

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
