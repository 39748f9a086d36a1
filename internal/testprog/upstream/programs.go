// Package upstream holds test programs for the testscripts: the broker's upstream sign-in: a scripted browser for sign-in pages, a legacy upstream API, a JSON-RPC broker client, and credential seeding.
// It is test support (see internal/testprog); only main_test.go imports it.
package upstream

// programs and cmds are filled by the init functions of this package's files.
var (
	programs = map[string]func(){}
)

// Programs are the programs testscript puts on PATH for exec, by name.
func Programs() map[string]func() { return programs }
