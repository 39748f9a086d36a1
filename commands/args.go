package commands

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs lets flags go anywhere on the command line, as in gh and every
// cobra program: urfave/cli v2 stops reading flags at the first positional
// argument, so `agentauth login ws://h:p --device` would see --device as a
// second TARGET. It returns args (args[0] is the program) rearranged as
// PROGRAM GLOBAL-FLAGS COMMAND COMMAND-FLAGS POSITIONALS, and the command's
// name ("" when there is none). A global flag given after the command moves
// before it. Everything after `--` stays positional, in order, behind the
// `--`. A flag that takes a value keeps the next argument with it unless
// written --flag=value. Unknown flags stay where urfave reports them.
func reorderArgs(app *cli.App, args []string) ([]string, string) {
	if len(args) < 2 {
		return args, ""
	}
	globalBool := boolFlagNames(app.Flags)
	globalAll := flagNames(app.Flags)
	var globals, rest []string
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || !isFlag(a) {
			break
		}
		globals = append(globals, a)
		if takesValue(a, globalAll, globalBool) && i+1 < len(args) {
			i++
			globals = append(globals, args[i])
		}
	}
	if i >= len(args) || args[i] == "--" {
		return args, ""
	}
	name := args[i]
	cmd := app.Command(name)
	if cmd == nil {
		return args, ""
	}
	cmdBool := boolFlagNames(cmd.Flags)
	cmdAll := flagNames(cmd.Flags)
	for _, n := range cli.HelpFlag.Names() {
		cmdBool[n], cmdAll[n] = true, true
	}
	var flags, positional []string
	dashdash := false
	for i++; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			dashdash = true
			rest = args[i+1:]
			i = len(args)
		case !isFlag(a):
			positional = append(positional, a)
		case !cmdAll[flagName(a)] && globalAll[flagName(a)]:
			globals = append(globals, a)
			if takesValue(a, globalAll, globalBool) && i+1 < len(args) {
				i++
				globals = append(globals, args[i])
			}
		default:
			flags = append(flags, a)
			if takesValue(a, cmdAll, cmdBool) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		}
	}
	out := append([]string{args[0]}, globals...)
	out = append(append(out, name), flags...)
	if dashdash || len(positional) > 0 && strings.HasPrefix(positional[0], "-") {
		out = append(out, "--")
	}
	out = append(append(out, positional...), rest...)
	return out, name
}

// isFlag says whether a looks like a flag: "-x", "--x", not "-" (stdin).
func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// flagName is a flag argument's name: "--scope=x" → "scope".
func flagName(a string) string {
	a = strings.TrimLeft(a, "-")
	if i := strings.IndexByte(a, '='); i >= 0 {
		a = a[:i]
	}
	return a
}

// takesValue says whether flag argument a is a known flag that takes its
// value from the next argument.
func takesValue(a string, all, bools map[string]bool) bool {
	n := flagName(a)
	return all[n] && !bools[n] && !strings.Contains(a, "=")
}

func flagNames(flags []cli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, fl := range flags {
		for _, n := range fl.Names() {
			m[n] = true
		}
	}
	return m
}

func boolFlagNames(flags []cli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, fl := range flags {
		if _, ok := fl.(*cli.BoolFlag); ok {
			for _, n := range fl.Names() {
				m[n] = true
			}
		}
	}
	return m
}
