package commands

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// appHelpExtra ends the root help: where to go next, and the exit codes.
const appHelpExtra = `
EXAMPLES:
   agentauth serve                                  # a development agent host on 127.0.0.1:7777
   agentauth login ws://127.0.0.1:7777              # log in (browser); add --device on SSH
   agentauth status                                 # what is stored, offline
   agentauth call ws://127.0.0.1:7777 whoami        # call a method with the stored token
   agentauth help login                             # help for one command

EXIT CODES:
   0    success
   1    failure
   2    usage error (bad flags or arguments)
   3    unknown: an ACP agent that reports no auth state (status --check asks it)
   4    authentication needed (no token, a rejected or unrefreshable token, a 401/403/-32007)
   130  interrupted (Ctrl-C)

HELP TOPICS:
   agentauth help exit-codes     # every exit code and what it means
   agentauth help environment    # every environment variable agentauth reads

Flags may come before or after the arguments; "--" ends the flags.
Shell completion: agentauth completion bash|zsh|fish|powershell.
`

// commandHelp is each command's EXAMPLES and EXIT CODES section.
type commandHelp struct {
	examples []string
	// exits are the exit codes besides 0 and 130, each with its meaning.
	exits []string
}

// commandHelps are each command's EXAMPLES and EXIT CODES, made when a
// help is printed.
var commandHelps = sync.OnceValue(func() map[string]commandHelp {
	return map[string]commandHelp{
		"serve": {
			examples: []string{
				"agentauth serve",
				"agentauth serve --listen 127.0.0.1:0 --addr-file addr   # a free port, written to addr",
				"agentauth serve --auto-approve                         # approve every login (scripts)",
			},
			exits: []string{"1  cannot listen (address in use: try --listen 127.0.0.1:0), bad config", "2  bad flags"},
		},
		"call": {
			examples: []string{
				"agentauth call ws://127.0.0.1:7777 whoami",
				"agentauth call http://127.0.0.1:7777/mcp tools/list --login",
				`agentauth call http://127.0.0.1:7777/mcp tools/call '{"name":"whoami"}' --json`,
			},
			exits: []string{"1  a JSON-RPC error or a failure", "2  bad flags or arguments", "4  authentication needed (-32007, 401, 403; an ACP agent's -32000), or an upstream sign-in that did not happen"},
		},
		"proxy": {
			examples: []string{
				"agentauth proxy http://127.0.0.1:7777/mcp             # in an MCP client's config: command + args",
				"agentauth proxy --device http://127.0.0.1:7777/mcp    # log in without a browser here (SSH)",
				"agentauth proxy --listen 127.0.0.1:0 --addr-file addr --url-file url http://127.0.0.1:7777/mcp   # the URL, with its secret, in url",
			},
			exits: []string{"1  stdin or stdout failed, or cannot listen", "2  bad flags or arguments"},
		},
		"discover": {
			examples: []string{
				"agentauth discover ws://127.0.0.1:7777",
				"agentauth discover http://127.0.0.1:7777/mcp --json",
			},
			exits: []string{"1  discovery failed", "2  bad flags or arguments"},
		},
		"login": {
			examples: []string{
				"agentauth login ws://127.0.0.1:7777",
				"agentauth login ws://127.0.0.1:7777 --device          # no browser here (SSH)",
				"agentauth login http://127.0.0.1:7777/mcp --scope agent:admin",
				"agentauth token ws://127.0.0.1:7777 | agentauth login --with-token ws://127.0.0.1:7777   # store a token you have",
				"agentauth login ws://127.0.0.1:7777 --force --json    # replace a valid login, no question",
			},
			exits: []string{"1  failure (network, store, timeout)", "2  bad flags or arguments", "4  the authorization was refused"},
		},
		"token": {
			examples: []string{
				"agentauth token ws://127.0.0.1:7777",
				`curl -H "Authorization: Bearer $(agentauth token http://127.0.0.1:7777/mcp)" -d '{"jsonrpc":"2.0","id":1,"method":"ping"}' http://127.0.0.1:7777/mcp`,
			},
			exits: []string{"1  failure", "2  bad flags or arguments", "4  no usable credential: log in (the command is printed)"},
		},
		"authenticate": {
			examples: []string{
				"agentauth authenticate ws://127.0.0.1:7777",
				"agentauth authenticate ws://127.0.0.1:7777 --watch --json",
			},
			exits: []string{"1  failure, or an ACP agent that cannot be checked", "2  bad flags or arguments; an ACP agent with several auth methods and no --method", "4  a scheme was not authenticated; an ACP agent refused, or still requires authentication"},
		},
		"status": {
			examples: []string{
				"agentauth status",
				"agentauth status ws://127.0.0.1:7777 --json",
			},
			exits: []string{"1  failure", "2  bad flags or arguments", "3  an ACP agent that reports no auth state (--check asks it with session/new)", "4  a credential is not usable (expired, rejected) or none is stored; an ACP agent not signed in"},
		},
		"token-revoke": {
			examples: []string{
				"agentauth token-revoke ws://127.0.0.1:7777",
				"agentauth token-revoke ws://127.0.0.1:7777 --local-only   # the same as logout",
			},
			exits: []string{"1  revocation failed (the credential is kept)", "2  bad flags or arguments", "4  nothing is stored for TARGET (as token says)"},
		},
		"logout": {
			examples: []string{
				"agentauth logout ws://127.0.0.1:7777",
				"agentauth logout ws://127.0.0.1:7777 --scheme dev --json",
			},
			exits: []string{"1  failure", "2  bad flags or arguments", "4  nothing is stored for TARGET (as token says)"},
		},
		"healthcheck": {
			examples: []string{
				"agentauth healthcheck --url http://127.0.0.1:7777/readyz",
				"agentauth healthcheck --url http://127.0.0.1:7777/healthz --timeout 2s   # liveness only",
			},
			exits: []string{"1  not ready: no answer, or not 200 OK", "2  bad flags (a --url off loopback without --allow-remote)"},
		},
		"completion": {
			examples: []string{
				`source <(agentauth completion bash)         # bash, e.g. in ~/.bashrc`,
				`mkdir -p ~/.zfunc && agentauth completion zsh > ~/.zfunc/_agentauth   # zsh, with fpath+=(~/.zfunc) before compinit in ~/.zshrc`,
				"mkdir -p ~/.config/fish/completions && agentauth completion fish > ~/.config/fish/completions/agentauth.fish",
			},
			exits: []string{"2  an unknown shell"},
		},
	}
})

// urfaveHelpPrinter is urfave's own HelpPrinter, which printHelp wraps.
var urfaveHelpPrinter = cli.HelpPrinter

func init() { cli.HelpPrinter = printHelp }

// printHelp prints help as urfave does, a command's (CustomHelpTemplate
// cli.CommandHelpTemplate, set by NewApp) followed by its EXAMPLES and
// EXIT CODES (commandHelpExtra), the root help with the version
// (fillVersion). They are added here, when the help is shown, so that a
// command's start-up does not build the twelve texts (about 0.1 ms;
// docs/performance.md) nor read the build information.
func printHelp(w io.Writer, templ string, data any) {
	if app, ok := data.(*cli.App); ok {
		fillVersion(app)
	}
	if cmd, ok := data.(*cli.Command); ok && templ == cli.CommandHelpTemplate {
		templ += commandHelpExtra(cmd.Name)
	}
	urfaveHelpPrinter(w, templ, data)
}

// commandHelpExtra is what follows urfave's help for command name.
func commandHelpExtra(name string) string {
	h := commandHelps()[name]
	var b strings.Builder
	if len(h.examples) > 0 {
		b.WriteString("\nEXAMPLES:\n")
		for _, e := range h.examples {
			b.WriteString("   $ " + e + "\n")
		}
	}
	if name == "serve" {
		// serve treats Ctrl-C and SIGTERM as "shut down": it ends cleanly.
		b.WriteString("\nEXIT CODES:\n   0    success, also after Ctrl-C or SIGTERM (a graceful shutdown)\n")
	} else {
		b.WriteString("\nEXIT CODES:\n   0    success\n")
	}
	for _, e := range h.exits {
		fmt.Fprintf(&b, "   %s\n", strings.Replace(e, "  ", "    ", 1))
	}
	if name != "serve" {
		b.WriteString("   130  interrupted (Ctrl-C)\n")
	}
	b.WriteString("\nFlags may come before or after TARGET; \"--\" ends the flags.\n")
	// urfave renders this as a template: keep our braces literal.
	return strings.ReplaceAll(b.String(), "{{", `{{"{{"}}`)
}

// unknownCommand refuses name, suggesting the nearest command.
func unknownCommand(app *cli.App, name string) error {
	best, bestDist := "", 3
	for _, c := range app.Commands {
		for _, n := range c.Names() {
			if d := editDistance(name, n); d < bestDist || strings.HasPrefix(n, name) && len(name) >= 3 && bestDist > 1 {
				best, bestDist = n, min(d, 1)
			}
		}
	}
	if best != "" {
		return usageErrorf("unknown command %q\n\nDid you mean this?\n    %s", safeText(name), best)
	}
	return usageErrorf("unknown command %q", safeText(name))
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
