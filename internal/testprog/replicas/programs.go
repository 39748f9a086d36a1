// Package replicas holds test programs for the testscripts: replicas and state: a login burst, a load-balancing proxy, and script commands on state files and PostgreSQL (filemode, nosecretsin, waitlines, pgstart, pgstop, pgrestart, grantsvalid, schemaversion, samekid, jwkskids).
// It is test support (see internal/testprog); only main_test.go imports it.
package replicas

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
