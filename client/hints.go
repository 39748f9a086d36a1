package client

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// This file is the one place that words the next step of a failure (the
// "hints" commands print under an error): which login to run (with
// --allow-resource when the target may get the resource's token only by
// the user's leave), what a refused connection or a TLS mismatch means,
// what to do with a server that publishes no OAuth metadata.

// LoginHint is the login command for target's requirement of resource
// (schemeID when several): with --allow-resource when resource is on
// another origin than target, or target is a stdio: agent, since a plain
// login would be refused there (see mayReceive). resource may be "" when
// unknown.
func LoginHint(target, schemeID, resource string) string {
	if resource != "" && !wire.SameOrigin(target, resource) {
		return allowResourceLogin(target, schemeID, resource)
	}
	return LoginCommand(target, schemeID)
}

// LoginHintFor is LoginHint when the resource is unknown (nothing stored
// for target): it names the resources the user allowed target to receive
// before (store.RememberAllowed), so that the login it suggests is not
// refused for want of --allow-resource.
func LoginHintFor(target, schemeID string) string {
	dir, err := store.ConfigDir()
	if err != nil {
		return LoginCommand(target, schemeID)
	}
	cmd := LoginCommand(target, schemeID)
	for _, r := range store.AllowedFor(dir, allowedTarget(target)) {
		cmd = strings.Replace(cmd, "agentauth login ", "agentauth login --allow-resource "+ShellQuote(r)+" ", 1)
	}
	return cmd
}

// WithScope is the login command cmd (LoginCommand, LoginHint) asking for
// scope too: the hint after an insufficient_scope refusal (RFC 6750
// §3.1), since login unites --scope with the scopes the resource
// requires, and a login without it would get the refused token's scope
// again.
func WithScope(cmd, scope string) string {
	return strings.Replace(cmd, "agentauth login ", "agentauth login --scope "+ShellQuote(scope)+" ", 1)
}

// EndpointHint is the next step after a 404 at target: when the protected
// resource metadata of target's origin names another resource there
// (flows.ResourceAtOrigin, RFC 9728 §3.1), the same command run at that
// resource, made by command; "" when there is none.
func (cl *Client) EndpointHint(ctx context.Context, target string, command func(endpoint string) string) string {
	ep := flows.ResourceAtOrigin(ctx, cl.HTTPClient, target)
	if ep == "" {
		return ""
	}
	return "The MCP endpoint here is " + ep + " (its protected resource metadata, RFC 9728); run: " + command(ep)
}

// NextSteps are the hints for err that do not depend on the command: a
// connection refused, TLS against a plain HTTP server, a server without
// OAuth metadata.
func NextSteps(err error, target string) []string {
	switch {
	case errors.Is(err, wire.ErrPlainHTTP):
		return []string{"The server speaks plain HTTP: use " + plainScheme(target) + " instead of " + schemeOf(target) + " (plain http only on loopback)."}
	case errors.Is(err, syscall.ECONNREFUSED):
		return []string{"Nothing listens there: is the server running? (start one with: agentauth serve)"}
	case errors.Is(err, flows.ErrNoAuthServerMetadata):
		t := target
		if t == "" {
			t = "TARGET"
		}
		return []string{"The authorization server publishes no OAuth metadata (RFC 8414). If you know its endpoints and have a client there, run:\n" +
			"  agentauth login --authorization-endpoint URL --token-endpoint URL --client-id ID [--client-secret-stdin] " + ShellQuote(wire.RedactTarget(t))}
	}
	return nil
}

func schemeOf(target string) string {
	if i := strings.Index(target, "://"); i > 0 {
		return strings.ToLower(target[:i]) + "://"
	}
	return "https://"
}

func plainScheme(target string) string {
	if schemeOf(target) == "wss://" {
		return "ws://"
	}
	return "http://"
}
