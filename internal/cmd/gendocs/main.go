//go:build !urfave_cli_no_docs

// Command gendocs writes agentauth's command reference, man page and
// shell completion scripts from the commands' own help, at release time
// (.goreleaser.yaml's before hooks), so that nothing is built at start-up:
//
//	go run ./internal/cmd/gendocs -reference docs/reference -man release-assets/man -completions release-assets/completions
//
// docs/reference holds one Markdown page per command and help topic (its
// --help text as printed), and is committed: TestReferenceIsCurrent
// fails when it differs from what the commands print. The man page comes
// from urfave/cli's ToMan, with EXIT STATUS and ENVIRONMENT from the help
// topics; urfave/cli builds ToMan without the urfave_cli_no_docs tag only,
// which the release binary keeps (so this program is built without it).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	reference := flag.String("reference", "", "write the Markdown command reference to `DIR`")
	man := flag.String("man", "", "write the man page agentauth.1 to `DIR`")
	completions := flag.String("completions", "", "write the bash, zsh, fish and PowerShell completion scripts to `DIR`")
	flag.Parse()
	if flag.NArg() > 0 || *reference == "" && *man == "" && *completions == "" {
		fmt.Fprintln(os.Stderr, "usage: gendocs [-reference DIR] [-man DIR] [-completions DIR]")
		os.Exit(2)
	}
	for _, step := range []struct {
		dir   string
		write func(string) error
	}{{*reference, writeReference}, {*man, writeMan}, {*completions, writeCompletions}} {
		if step.dir == "" {
			continue
		}
		if err := step.write(step.dir); err != nil {
			fmt.Fprintln(os.Stderr, "gendocs:", err)
			os.Exit(1)
		}
	}
}
