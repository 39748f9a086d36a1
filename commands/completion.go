package commands

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// newCompletionCommand prints a shell completion script for agentauth's
// commands and flags, written from the command list itself.
func newCompletionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes agentauth's commands and flags. Load it once
per shell (see the examples), or save it where your shell looks for completions.
zsh uses the bash script through bashcompinit.`,
		Action: func(c *cli.Context) error {
			if c.Args().Len() != 1 {
				return usageErrorf("completion expects one shell: bash, zsh or fish")
			}
			var script string
			switch shell := c.Args().First(); shell {
			case "bash":
				script = bashCompletion(c.App)
			case "zsh":
				script = "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n" + bashCompletion(c.App)
			case "fish":
				script = fishCompletion(c.App)
			default:
				return usageErrorf("completion: unknown shell %q: use bash, zsh or fish", safeText(shell))
			}
			_, err := fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}

// longFlags lists the --names of flags and --help, sorted, once each.
func longFlags(flags []cli.Flag) []string {
	seen := map[string]bool{"--help": true}
	for _, fl := range flags {
		for _, n := range fl.Names() {
			if len(n) > 1 {
				seen["--"+n] = true
			}
		}
	}
	out := slices.Collect(maps.Keys(seen))
	sort.Strings(out)
	return out
}

func bashCompletion(app *cli.App) string {
	var b strings.Builder
	b.WriteString("# bash completion for agentauth: source <(agentauth completion bash)\n")
	b.WriteString("_agentauth() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} cmd= i\n")
	b.WriteString("  for ((i = 1; i < COMP_CWORD; i++)); do\n")
	b.WriteString("    case ${COMP_WORDS[i]} in --store) ((i++)) ;; -*) ;; *) cmd=${COMP_WORDS[i]}; break ;; esac\n")
	b.WriteString("  done\n")
	b.WriteString("  case $cmd in\n")
	var names []string
	for _, c := range app.Commands {
		names = append(names, c.Name)
	}
	fmt.Fprintf(&b, "  '') COMPREPLY=($(compgen -W '%s help %s' -- \"$cur\")) ;;\n", strings.Join(names, " "), strings.Join(longFlags(app.Flags), " "))
	fmt.Fprintf(&b, "  help) COMPREPLY=($(compgen -W '%s' -- \"$cur\")) ;;\n", strings.Join(names, " "))
	for _, c := range app.Commands {
		fmt.Fprintf(&b, "  %s) [[ $cur == -* ]] && COMPREPLY=($(compgen -W '%s' -- \"$cur\")) ;;\n", c.Name, strings.Join(longFlags(c.Flags), " "))
	}
	b.WriteString("  esac\n}\n")
	b.WriteString("complete -o default -F _agentauth agentauth\n")
	return b.String()
}

func fishCompletion(app *cli.App) string {
	var b strings.Builder
	b.WriteString("# fish completion for agentauth: agentauth completion fish | source\n")
	b.WriteString("complete -c agentauth -f\n")
	for _, fl := range app.Flags {
		usage := ""
		if d, ok := fl.(cli.DocGenerationFlag); ok {
			usage = d.GetUsage()
		}
		fmt.Fprintf(&b, "complete -c agentauth -n __fish_use_subcommand -l %s -d %s\n", fl.Names()[0], fishQuote(usage))
	}
	for _, c := range app.Commands {
		fmt.Fprintf(&b, "complete -c agentauth -n __fish_use_subcommand -a %s -d %s\n", c.Name, fishQuote(c.Usage))
		for _, fl := range c.Flags {
			name := fl.Names()[0]
			usage := ""
			if d, ok := fl.(cli.DocGenerationFlag); ok {
				usage = d.GetUsage()
			}
			fmt.Fprintf(&b, "complete -c agentauth -n '__fish_seen_subcommand_from %s' -l %s -d %s\n", c.Name, name, fishQuote(usage))
		}
	}
	return b.String()
}

// fishQuote quotes s for fish, whose single quotes escape \ and '.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}
