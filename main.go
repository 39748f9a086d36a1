// Command agentauth is both ends of standards-based authentication for agent
// protocols: an agent host with an embedded development authorization server
// (serve) and the client that discovers, logs in and hands tokens over.
package main

import (
	"os"

	"github.com/agentauth/agentauth/commands"
)

func main() { os.Exit(commands.Main()) }
