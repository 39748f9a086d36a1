package commands

import "github.com/urfave/cli/v2"

func newCallCommand(f *Factory) *cli.Command {
	return &cli.Command{Name: "call", Usage: "call a method on an agent host (TODO)"}
}
