package commands

import (
	"slices"
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
	i := commandIndex(app, args)
	if i == 0 {
		return args, ""
	}
	globalBool := boolFlagNames(app.Flags)
	globalAll := flagNames(app.Flags)
	globals := slices.Clone(args[1:i])
	var rest []string
	name := args[i]
	cmd := app.Command(name)
	if cmd == nil {
		return args, ""
	}
	cmdBool := boolFlagNames(cmd.Flags)
	cmdAll := flagNames(cmd.Flags)
	eachFlagName(cli.HelpFlag, func(n string) { cmdBool[n], cmdAll[n] = true, true })
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

// commandIndex is the index in args of the command's name: the first
// word after the global flags and their values; 0 when there is none
// (nothing, or "--", after the global flags).
func commandIndex(app *cli.App, args []string) int {
	globalBool := boolFlagNames(app.Flags)
	globalAll := flagNames(app.Flags)
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || !isFlag(a) {
			break
		}
		if takesValue(a, globalAll, globalBool) && i+1 < len(args) {
			i++
		}
	}
	if i >= len(args) || args[i] == "--" {
		return 0
	}
	return i
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

// flagNames is the set of the names and aliases of flags.
func flagNames(flags []cli.Flag) map[string]bool {
	m := make(map[string]bool, len(flags))
	for _, fl := range flags {
		eachFlagName(fl, func(n string) { m[n] = true })
	}
	return m
}

// boolFlagNames is the set of the names and aliases of the flags of
// flags that take no value.
func boolFlagNames(flags []cli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, fl := range flags {
		if _, ok := fl.(*cli.BoolFlag); ok {
			eachFlagName(fl, func(n string) { m[n] = true })
		}
	}
	return m
}

// hasFlagNamed says whether one of flags is called name.
func hasFlagNamed(flags []cli.Flag, name string) bool {
	found := false
	for _, fl := range flags {
		eachFlagName(fl, func(n string) { found = found || n == name })
	}
	return found
}

// eachFlagName calls f with fl's name and each of its aliases, as
// declared. fl.Names() gives the same for every flag agentauth declares,
// but runs a regular expression over each name on every call (urfave/cli
// v2 strips a v1-style "name, alias" spelling): about 0.15 ms of every
// command's start for the flags NewApp and reorderArgs look at.
func eachFlagName(fl cli.Flag, f func(string)) {
	var name string
	var aliases []string
	switch fl := fl.(type) {
	case *cli.BoolFlag:
		name, aliases = fl.Name, fl.Aliases
	case *cli.StringFlag:
		name, aliases = fl.Name, fl.Aliases
	case *cli.StringSliceFlag:
		name, aliases = fl.Name, fl.Aliases
	case *cli.DurationFlag:
		name, aliases = fl.Name, fl.Aliases
	case *cli.IntFlag:
		name, aliases = fl.Name, fl.Aliases
	default:
		for _, n := range fl.Names() {
			f(n)
		}
		return
	}
	f(name)
	for _, a := range aliases {
		f(a)
	}
}
