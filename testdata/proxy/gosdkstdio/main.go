// Command gosdkstdio is the MCP Go SDK's client over its CommandTransport
// (internal/testprog/proxy's gosdkstdio, which the proxy_*.txtar scripts
// run), built as a binary for run.sh to drive agentauth proxy against the
// servers there.
package main

import "github.com/agentauth/agentauth/internal/testprog/proxy"

func main() { proxy.Programs()["gosdkstdio"]() }
