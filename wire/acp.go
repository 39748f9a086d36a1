package wire

import (
	"cmp"
	"encoding/json"
)

// AuthMethod is an ACP auth method advertisement. agentauth's are of
// Type "agent" (the agent authenticates), with what a client needs to
// obtain a token under Meta[ACPOAuthMetaKey].
type AuthMethod struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Type        string         `json:"type,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
	// Vars and Link describe an env_var method: the variables the agent
	// reads and where to get their values (ACP schema/v1/schema.unstable.json
	// of v1.4.0–v1.6.0, AuthMethodEnvVar and AuthEnvVar; 1.7.0 removed the
	// type, but agents such as codex-acp still advertise it). VarName is
	// the single variable of the RFD's first draft, read for older agents.
	Vars    []AuthEnvVar `json:"vars,omitempty"`
	VarName string       `json:"varName,omitempty"`
	Link    string       `json:"link,omitempty"`
	// Args and Env describe a terminal method: appended to, and set on,
	// the agent's own command line (ACP schema 1.7.0, AuthMethodTerminal).
	Args []string          `json:"args,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
}

// ACP auth method types (ACP schema 1.7.0, AuthMethod; env_var from the
// unstable schema of v1.4.0–v1.6.0).
const (
	AuthMethodAgent    = "agent"
	AuthMethodTerminal = "terminal"
	AuthMethodEnvVar   = "env_var"
)

// Kind is the method's type, "agent" when it names none (ACP schema
// 1.7.0: "When no type is present, the method is treated as agent").
func (m AuthMethod) Kind() string { return cmp.Or(m.Type, AuthMethodAgent) }

// AuthEnvVar is one variable of an env_var method.
type AuthEnvVar struct {
	Name     string `json:"name"`
	Label    string `json:"label,omitempty"`
	Secret   *bool  `json:"secret,omitempty"`
	Optional bool   `json:"optional,omitempty"`
}

// VarNames lists the variables an env_var method reads: vars[].name, or
// the older varName.
func (m AuthMethod) VarNames() []string {
	var out []string
	for _, v := range m.Vars {
		if v.Name != "" {
			out = append(out, v.Name)
		}
	}
	if len(out) == 0 && m.VarName != "" {
		out = []string{m.VarName}
	}
	return out
}

// Implementation is ACP's Implementation (schema 1.7.0): name and version
// are what a peer shows and logs.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// ACPOAuthMetaKey is the _meta key under which agentauth's ACP face
// describes an agent-type auth method's protected resource (RFC 9728
// metadata with scheme_id and required).
const ACPOAuthMetaKey = "agentauth.dev/oauth"

// acpRequirements reads the requirements of an ACP initialize result
// from its auth methods' ACPOAuthMetaKey: an ACP InitializeResponse has
// no other place for them. Methods without it (real agents' own) are no
// requirement a client can hold a token for.
func (r *InitializeResult) acpRequirements() []Requirement {
	var out []Requirement
	for _, m := range r.AuthMethods {
		raw, ok := m.Meta[ACPOAuthMetaKey]
		if !ok {
			continue
		}
		b, _ := json.Marshal(raw)
		var p ProtectedResourceMetadata
		if json.Unmarshal(b, &p) != nil || p.Resource == "" {
			continue
		}
		req := p.Required == nil || *p.Required
		out = append(out, Requirement{SchemeID: cmp.Or(p.SchemeID, m.ID), Label: p.ResourceName, Resource: p.Resource,
			AuthorizationServers: p.AuthorizationServers, ScopesSupported: p.ScopesSupported, Required: req})
	}
	return out
}

// TerminalAuthMetaKey is the _meta key of Zed's terminal-auth convention:
// in clientCapabilities._meta, true says the client runs login commands;
// in an auth method's _meta, the command to run (TerminalAuth).
const TerminalAuthMetaKey = "terminal-auth"

// TerminalAuth is an auth method's _meta["terminal-auth"]: a command line
// to run on the user's terminal to sign in, with env applied over the
// client's. Unlike an ACP terminal method (Args appended to the agent's
// own command), Command is a program of its own, looked up in PATH when it
// has no slash. GitHub Copilot CLI 1.0 ("copilot login"), opencode 1.18,
// kilo 7.7, auggie 0.36 and qodercli 1.1 advertise it.
type TerminalAuth struct {
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Label   string            `json:"label,omitempty"`
}

// maxTerminalAuthArgs bounds the arguments read from a peer's
// terminal-auth command.
const maxTerminalAuthArgs = 64

// TerminalAuth reads the method's _meta["terminal-auth"]; nil when it has
// none, or one without a command (or with more than 64 arguments or
// variables).
func (m AuthMethod) TerminalAuth() *TerminalAuth {
	raw, ok := m.Meta[TerminalAuthMetaKey]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var t TerminalAuth
	if json.Unmarshal(b, &t) != nil || t.Command == "" || len(t.Args) > maxTerminalAuthArgs || len(t.Env) > maxTerminalAuthArgs {
		return nil
	}
	return &t
}

// RunsCommand reports whether the method signs in by running a command on
// the user's terminal: an ACP terminal method, or an agent method with a
// terminal-auth command (which is run rather than sending authenticate,
// to which such agents answer -32000 or {} without signing in).
func (m AuthMethod) RunsCommand() bool {
	return m.Kind() == AuthMethodTerminal || (m.Kind() == AuthMethodAgent && m.TerminalAuth() != nil)
}
