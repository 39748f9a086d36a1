// Command clibaseline is the floor status.sh compares `agentauth status`
// with: a minimal urfave/cli program whose status command reads the same
// credentials.json and prints one line per credential. What agentauth
// takes beyond it is its own start-up and work.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
)

func main() {
	app := &cli.App{Name: "clibaseline", Commands: []*cli.Command{{
		Name: "status",
		Action: func(c *cli.Context) error {
			data, err := os.ReadFile(filepath.Join(os.Getenv("AGENTAUTH_CONFIG_DIR"), "credentials.json"))
			if err != nil {
				return err
			}
			var doc struct {
				Credentials []struct {
					Resource string `json:"resource"`
					Issuer   string `json:"issuer"`
				} `json:"credentials"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				return err
			}
			out := bufio.NewWriter(os.Stdout)
			defer out.Flush()
			for _, c := range doc.Credentials {
				fmt.Fprintf(out, "%s\n  - Issuer: %s\n", c.Resource, c.Issuer)
			}
			return nil
		},
	}}}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
