// Package mcp holds test programs for the testscripts: MCP HTTP helpers: mcppost, a CIMD document server, an always-401 MCP server, a redirecting MCP server, an interoperability authorization server, a token endpoint fake, and the freeport script command.
// It is test support (see internal/testprog); only main_test.go imports it.
package mcp

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
