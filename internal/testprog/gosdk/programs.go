// Package gosdk holds test programs for the testscripts: the official MCP Go SDK as client (gosdkclient) and as server (gosdkserver) against agentauth.
// It is test support (see internal/testprog); only main_test.go imports it.
package gosdk

// programs and cmds are filled by the init functions of this package's files.
var (
	programs = map[string]func(){}
)

// Programs are the programs testscript puts on PATH for exec, by name.
func Programs() map[string]func() { return programs }
