package commands

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/urfave/cli/v2"
)

// newCompletionCommand prints a shell completion script. The scripts are
// small and ask agentauth itself (the hidden __complete command) what to
// offer, so commands, flags, flag values and the stored targets are
// always those of the installed binary and of the user's store.
func newCompletionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh, fish or powershell)",
		ArgsUsage: "bash|zsh|fish|powershell",
		Description: `Prints a script that completes agentauth's commands, flags, flag values
(--store keyring|file, …) and the targets you have logged in to. Load it once
per shell (see the examples), or save it where your shell looks for
completions: zsh's script starts with #compdef and goes in a directory of
$fpath (it does not run compinit: your ~/.zshrc does). PowerShell (7, or
Windows PowerShell 5.1) loads it with this line, in $PROFILE for every session:
  agentauth completion powershell | Out-String | Invoke-Expression`,
		Action: func(c *cli.Context) error {
			if c.Args().Len() != 1 {
				return usageErrorf("completion expects one shell: bash, zsh, fish or powershell")
			}
			var script string
			switch shell := c.Args().First(); shell {
			case "bash":
				script = bashCompletion
			case "zsh":
				script = zshCompletion
			case "fish":
				script = fishCompletion
			case "powershell":
				script = powershellCompletion
			default:
				return usageErrorf("completion: unknown shell %q: use bash, zsh, fish or powershell", safeText(shell))
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

// bashCompletion splits the line itself (COMP_WORDS breaks ws://h:p at
// each colon) and strips what bash takes as already typed before the last
// colon from each candidate.
const bashCompletion = `# bash completion for agentauth: source <(agentauth completion bash)
_agentauth() {
  local line=${COMP_LINE:0:COMP_POINT} cur out IFS
  local -a words
  read -ra words <<< "$line"
  [[ $line == *[[:space:]] || ${#words[@]} -eq 0 ]] && words+=("")
  cur=${words[${#words[@]}-1]}
  IFS=$'\n'
  out=($(agentauth __complete -- "${words[@]:1}" 2>/dev/null))
  if [[ ${out[0]} == :files ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
    return
  fi
  if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
    local pre=${cur%"${cur##*:}"}
    out=("${out[@]#"$pre"}")
  fi
  COMPREPLY=("${out[@]}")
}
complete -F _agentauth agentauth
`

// zshCompletion is an autoloadable completion function (#compdef) that
// also works when sourced after compinit.
const zshCompletion = `#compdef agentauth
# zsh completion for agentauth: agentauth completion zsh > ~/.zfunc/_agentauth
# (with fpath+=(~/.zfunc) before compinit in ~/.zshrc), or source it after compinit.
_agentauth() {
  local -a out
  out=("${(@f)$(agentauth __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ ${out[1]} == :files ]]; then
    _files
    return
  fi
  out=(${out:#})
  (( ${#out} )) && compadd -- "${out[@]}"
}
if [[ ${funcstack[1]} == _agentauth ]]; then
  _agentauth "$@"
else
  compdef _agentauth agentauth
fi
`

// fishCompletion asks __complete with the tokens before the cursor and
// the one under it.
const fishCompletion = `# fish completion for agentauth: agentauth completion fish | source
function __agentauth_complete
    set -l words (commandline -opc)[2..-1] (commandline -ct)
    set -l out (agentauth __complete -- $words 2>/dev/null)
    if test "$out[1]" = ":files"
        __fish_complete_path (commandline -ct)
        return
    end
    printf '%s\n' $out
end
complete -c agentauth -f -a '(__agentauth_complete)'
`

// powershellCompletion registers a native argument completer that asks
// __complete, like the other scripts. urfave/cli/v2's own PowerShell
// script (autocomplete/powershell_autocomplete.ps1 in its repository, not
// in the Go package) drives --generate-bash-completion, which agentauth
// does not use: its candidates come from __complete. PowerShell before
// 7.3 drops an empty argument to a native command, so the word being
// started is passed as '""' there.
const powershellCompletion = `# PowerShell completion for agentauth:
#   agentauth completion powershell | Out-String | Invoke-Expression
# (add that line to $PROFILE to load it in every session)
Register-ArgumentCompleter -Native -CommandName 'agentauth', 'agentauth.exe' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $words = @($commandAst.CommandElements | Select-Object -Skip 1 |
        Where-Object { $_.Extent.StartOffset -lt $cursorPosition } |
        ForEach-Object { $_.Extent.Text })
    if ($wordToComplete -eq '') {
        $legacy = $PSVersionTable.PSVersion -lt [version]'7.3.0' -or $PSNativeCommandArgumentPassing -eq 'Legacy'
        if ($legacy) { $words += '""' } else { $words += '' }
    }
    $out = @(& agentauth __complete '--' @words 2>$null)
    if ($out.Count -gt 0 -and $out[0] -eq ':files') {
        Get-ChildItem -Path "$wordToComplete*" -ErrorAction SilentlyContinue | ForEach-Object {
            [System.Management.Automation.CompletionResult]::new($_.Name, $_.Name, 'ProviderItem', $_.Name)
        }
        return
    }
    $out | Where-Object { $_ -ne '' } | ForEach-Object {
        [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)
    }
}
`
