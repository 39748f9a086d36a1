package commands

import "github.com/urfave/cli/v2"

func newServeCommand(f *Factory) *cli.Command {
	return &cli.Command{Name: "serve", Usage: "run the agent host (TODO)"}
}
