package script_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentauth/agentauth/agentauthtest/script"
)

// The programs go to testscript.Main (in TestMain), the commands and
// Setup to the suite's testscript.Params.
func Example() {
	params := testscript.Params{
		Dir:   "testdata/script",
		Setup: script.Setup,
		Cmds:  script.Cmds(),
	}
	fmt.Println("programs:", slices.Sorted(maps.Keys(script.Programs())))
	fmt.Println("commands:", slices.Sorted(maps.Keys(params.Cmds)))
	// Output:
	// programs: [agentauth browser-fetch]
	// commands: [addrenv expandenv jwtpayload nosecrets waitfile]
}
