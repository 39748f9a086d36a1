//go:build linkagentauth

package main

// Built with -tags linkagentauth, the reference links every package
// agentauth does and runs their init, but does none of agentauth's work:
// status.sh's measure of what linking alone costs.
import _ "github.com/agentauth/agentauth/commands"
