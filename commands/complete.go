package commands

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/store"
)

// completeFiles is the one-line answer of __complete that asks the shell
// to complete file names (the value of a file flag).
const completeFiles = ":files"

// flagValues are the values of the flags that take one of a few words.
var flagValues = map[string][]string{
	"store":         {store.KindKeyring, store.KindFile},
	"callback-host": {"127.0.0.1", "localhost"},
	"auth-scope":    {"connection", "host"},
	"log-level":     {"debug", "info", "warn", "error"},
	"dialect":       {"design", "published", "acp"},
	"mcp-version":   {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"},
}

// fileFlags take a file or directory name.
var fileFlags = []string{"config", "addr-file", "log-file", "data-dir", "state-key-file", "private-key", "assertion-file", "id-token-file"}

// targetCommands take TARGET as their first positional argument.
var targetCommands = []string{"discover", "login", "token", "authenticate", "status", "token-revoke", "logout", "call", "proxy"}

// newCompleteCommand is the hidden command the completion scripts call:
// `agentauth __complete -- WORD… CURRENT` prints the candidates for
// CURRENT, one a line (or completeFiles). It reads the stored targets
// from the file store and the keyring's index, never the keyring itself
// (no D-Bus call, no unlock prompt on a key press).
func newCompleteCommand() *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			words := c.Args().Slice()
			if len(words) > 0 && words[0] == "--" {
				words = words[1:]
			}
			for _, s := range completeWords(c.App, words, storedTargets) {
				fmt.Fprintln(c.App.Writer, s)
			}
			return nil
		},
	}
}

// completeWords returns the candidates for the last of words (the words
// after "agentauth"; the last may be ""): commands, flags, flag values,
// shells, and stored targets.
func completeWords(app *cli.App, words []string, targets func() []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var cmd *cli.Command
	positional := 0
	flags := slices.Clone(app.Flags)
	for i := 0; i < len(before); i++ {
		w := before[i]
		switch {
		case w == "--":
		case strings.HasPrefix(w, "-"):
			if !strings.Contains(w, "=") && takesValueIn(flags, w) {
				i++
				if i == len(before) {
					// cur is this flag's value.
					return valuesFor(strings.TrimLeft(w, "-"), cur)
				}
			}
		case cmd == nil && w != "help":
			if cmd = app.Command(w); cmd != nil {
				flags = append(flags, cmd.Flags...)
			}
		case cmd == nil && w == "help":
			return matching(append(commandNames(app), helpTopicNames()...), cur)
		default:
			positional++
		}
	}
	if strings.HasPrefix(cur, "-") {
		if name, _, ok := strings.Cut(strings.TrimLeft(cur, "-"), "="); ok {
			return valuesFor(name, strings.SplitN(cur, "=", 2)[1])
		}
		return matching(longFlags(flags), cur)
	}
	switch {
	case cmd == nil:
		return matching(append(commandNames(app), "help"), cur)
	case cmd.Name == "completion":
		if positional == 0 {
			return matching([]string{"bash", "zsh", "fish", "powershell"}, cur)
		}
	case slices.Contains(targetCommands, cmd.Name) && positional == 0:
		return matching(targets(), cur)
	}
	return nil
}

func commandNames(app *cli.App) []string {
	var out []string
	for _, c := range app.Commands {
		if !c.Hidden {
			out = append(out, c.Name)
		}
	}
	return out
}

// takesValueIn says whether the flag word w (--name or -n) takes a value.
func takesValueIn(flags []cli.Flag, w string) bool {
	name := strings.TrimLeft(w, "-")
	for _, fl := range flags {
		if slices.Contains(fl.Names(), name) {
			d, ok := fl.(cli.DocGenerationFlag)
			return ok && d.TakesValue()
		}
	}
	return false
}

func valuesFor(flag, cur string) []string {
	if slices.Contains(fileFlags, flag) {
		return []string{completeFiles}
	}
	return matching(flagValues[flag], cur)
}

func matching(all []string, prefix string) []string {
	var out []string
	for _, s := range all {
		if strings.HasPrefix(s, prefix) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// storedTargets are the targets and resources of the stored credentials:
// the file store's (the one chosen, or the keyring's fallback copies) and
// the resources the keyring's index names.
func storedTargets() []string {
	dir, err := store.ConfigDir()
	if err != nil {
		return nil
	}
	var out []string
	if st, err := store.Open(store.KindFile, dir); err == nil {
		creds, _ := st.List(context.Background())
		for _, c := range creds {
			if c.Target != "" {
				out = append(out, c.Target)
			}
			out = append(out, c.Resource)
		}
	}
	out = append(out, store.IndexedResources(dir)...)
	slices.Sort(out)
	return slices.Compact(out)
}
