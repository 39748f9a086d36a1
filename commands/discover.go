package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// DiscoverOptions are discover's inputs.
type DiscoverOptions struct {
	IO         *IOStreams
	HTTPClient *http.Client

	Target string
	JSON   bool
}

func newDiscoverCommand(f *Factory) *cli.Command { return discoverCommand(f, runDiscover) }

// discoverCommand builds the command; run is runDiscover except in the flag tests.
func discoverCommand(f *Factory, run func(context.Context, *DiscoverOptions) error) *cli.Command {
	opts := &DiscoverOptions{}
	return &cli.Command{
		Name:      "discover",
		Usage:     "show what authentication a target needs, and from which authorization servers",
		ArgsUsage: "TARGET",
		Description: `TARGET is an agent host (ws://HOST:PORT, wss://…, stdio:COMMAND LINE) or an
MCP server / protected resource (https://…, or http:// on a loopback address).

Agent hosts: initialize, then read the declared schemes (resourceMetadata or
protectedResources, both dialects). HTTP targets: an unauthenticated request,
its WWW-Authenticate resource_metadata, else the RFC 9728 well-known documents
(path-aware, then root); with none at all, the MCP 2025-03-26 fallback treats
the origin as the authorization server (with a warning on stderr). Then, for
each requirement, the RFC 8414 / OpenID Connect metadata of its first
authorization server, checked: issuer, S256 PKCE, https or loopback http.

Prints one block per requirement on stdout; --json prints one document:
{"target", "kind" ("agent-host"|"http"), "dialect", "httpStatus",
 "metadataUrl", "legacy", "warnings", "requirements": [{"schemeId", "label",
 "resource", "authorizationServers", "scopesSupported", "challengeScope",
 "required", "authorizationServer": {"issuer", "authorizationEndpoint",
 "tokenEndpoint", "deviceAuthorizationEndpoint", "registrationEndpoint",
 "revocationEndpoint", "grantTypes", "tokenEndpointAuthMethods",
 "codeChallengeMethods", "clientIdMetadataDocumentSupported",
 "issParameterSupported"}, "registration": ["preregistered", "cimd", "dcr"] (those offered),
 "error"}]}. Exits 1 when any requirement's authorization server fails its checks.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout", Destination: &opts.JSON},
		},
		Action: func(c *cli.Context) error {
			var err error
			if opts.Target, err = targetArg(c); err != nil {
				return err
			}
			opts.IO, opts.HTTPClient = f.IO, f.HTTPClient
			return withTarget(opts.Target, run(c.Context, opts))
		},
	}
}

func runDiscover(ctx context.Context, opts *DiscoverOptions) error {
	info, err := client.Discover(ctx, opts.HTTPClient, opts.IO.ErrOut, opts.Target)
	if err != nil {
		return err
	}
	info.Close()
	for _, w := range info.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "%s %s\n", opts.IO.ErrPainter().Yellow("warning:"), safeText(w))
	}
	if opts.JSON {
		b, err := json.MarshalIndent(discoverDocument(info), "", "  ")
		if err != nil {
			return fmt.Errorf("cannot print the discovery: %w", err)
		}
		fmt.Fprintln(opts.IO.Out, string(b))
	} else {
		printDiscovery(info, opts.IO.Out, opts.IO.OutPainter())
	}
	var failed []string
	for _, r := range info.Requirements {
		if r.Err != nil {
			failed = append(failed, r.Name())
		}
	}
	if len(failed) > 0 {
		if !opts.JSON {
			for _, r := range info.Requirements {
				if r.Err != nil {
					fmt.Fprintf(opts.IO.ErrOut, "agentauth: %s: %s\n", safeText(r.Name()), safeText(r.Err.Error()))
				}
			}
		}
		return &SilentError{Code: ExitError}
	}
	return nil
}

var registrationLabels = map[string]string{
	"preregistered": "pre-registered client (--client-id)",
	"cimd":          "client ID metadata document (--client-metadata-url)",
	"dcr":           "dynamic registration (RFC 7591)",
}

// printDiscovery writes info for people: one block per requirement.
func printDiscovery(info *client.TargetInfo, w io.Writer, p Painter) {
	for i, r := range info.Requirements {
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := r.Name()
		if r.Label != "" && r.Label != title {
			title += " (" + r.Label + ")"
		}
		fmt.Fprintln(w, p.Bold(safeText(title)))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		row := func(k, v string) { fmt.Fprintf(tw, "  %s:\t%s\n", k, safeText(v)) }
		row("resource", r.Resource)
		row("authorization servers", orNone(strings.Join(r.AuthorizationServers, ", ")))
		row("scopes", orNone(wire.JoinScope(r.ScopesSupported)))
		if r.ChallengeScope != "" {
			row("challenge scope", r.ChallengeScope)
		}
		if md := r.AuthServer; md != nil && md.Guessed {
			// Nothing was published: say what is guessed, and claim nothing.
			row("required", "unknown (no protected resource metadata)")
			row("metadata", "none published; MCP 2025-03-26 defaults guessed: "+md.AuthorizationEndpoint+", "+md.TokenEndpoint+", "+md.RegistrationEndpoint)
			row("registration", "unknown (login tries the guessed "+md.RegistrationEndpoint+"; else --client-id)")
			tw.Flush()
			continue
		}
		row("required", yesNo(r.Required))
		if md := r.AuthServer; md != nil {
			row("grant types", strings.Join(client.GrantTypes(md), ", "))
			var regs []string
			for _, o := range client.RegistrationOptions(md) {
				regs = append(regs, registrationLabels[o])
			}
			row("registration", strings.Join(regs, ", "))
		} else if r.Err != nil {
			row("error", p.Red(safeText(r.Err.Error())))
		}
		tw.Flush()
	}
	if len(info.Requirements) == 0 && len(info.AuthMethods) > 0 {
		fmt.Fprintln(w, p.Bold("auth methods"))
		for _, m := range acpMethodDocs(info) {
			fmt.Fprintf(w, "  %s (%s): %s\n", safeText(m.ID), safeText(m.Type), safeText(m.Name))
			if m.Description != "" {
				fmt.Fprintf(w, "    %s\n", safeText(m.Description))
			}
			if len(m.Vars) > 0 {
				fmt.Fprintf(w, "    set %s%s\n", safeText(strings.Join(m.Vars, ", ")), safeText(cmpSuffix(" (get it at ", m.Link, ")")))
			}
			if m.Command != "" {
				fmt.Fprintf(w, "    command: %s\n", safeText(m.Command))
			}
			fmt.Fprintf(w, "    run: %s\n", safeText(client.CommandLine("agentauth", "authenticate", "--method", m.ID, wire.RedactTarget(info.Target))))
		}
	}
	if len(info.Requirements) == 0 && len(info.AuthMethods) == 0 {
		fmt.Fprintf(w, "%s declares no auth requirement.\n", wire.RedactTarget(info.Target))
	}
}

func cmpSuffix(pre, s, post string) string {
	if s == "" {
		return ""
	}
	return pre + s + post
}

// acpMethodDoc is one ACP auth method in discover's output: by type,
// what the user does (env_var: the variable and its link; terminal: the
// command to run; agent: authenticate --method).
type acpMethodDoc struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// Vars are an env_var method's variables (vars[].name).
	Vars    []string `json:"vars,omitempty"`
	Link    string   `json:"link,omitempty"`
	Command string   `json:"command,omitempty"`
}

func acpMethodDocs(info *client.TargetInfo) []acpMethodDoc {
	out := []acpMethodDoc{}
	for _, m := range info.AuthMethods {
		d := acpMethodDoc{ID: m.ID, Name: m.Name, Type: m.Kind(), Description: m.Description, Vars: m.VarNames(), Link: m.Link}
		if m.RunsCommand() {
			// The login command, shell-quoted, after the variables it
			// sets (a terminal method's env, or terminal-auth's).
			vars := m.Env
			if ta := m.TerminalAuth(); ta != nil && m.Kind() != wire.AuthMethodTerminal {
				vars = ta.Env
			}
			var env []string
			for k, v := range vars {
				env = append(env, client.ShellQuote(k+"="+v))
			}
			slices.Sort(env)
			d.Command = strings.Join(append(env, methodCommandLine(info.Target, m)), " ")
		}
		out = append(out, d)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// discoverDoc is discover --json's document (documented in its help).
type discoverDoc struct {
	Target       string           `json:"target"`
	Kind         string           `json:"kind"`
	Dialect      string           `json:"dialect,omitempty"`
	HTTPStatus   int              `json:"httpStatus,omitempty"`
	MetadataURL  string           `json:"metadataUrl,omitempty"`
	Legacy       bool             `json:"legacy"`
	Warnings     []string         `json:"warnings"`
	Requirements []requirementDoc `json:"requirements"`
	AuthMethods  []acpMethodDoc   `json:"authMethods,omitempty"`
}

type requirementDoc struct {
	SchemeID             string         `json:"schemeId,omitempty"`
	Label                string         `json:"label,omitempty"`
	Resource             string         `json:"resource"`
	AuthorizationServers []string       `json:"authorizationServers"`
	ScopesSupported      []string       `json:"scopesSupported"`
	ChallengeScope       string         `json:"challengeScope,omitempty"`
	Required             bool           `json:"required"`
	AuthorizationServer  *authServerDoc `json:"authorizationServer,omitempty"`
	Registration         []string       `json:"registration,omitempty"`
	Error                string         `json:"error,omitempty"`
}

type authServerDoc struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorizationEndpoint,omitempty"`
	TokenEndpoint                     string   `json:"tokenEndpoint,omitempty"`
	DeviceAuthorizationEndpoint       string   `json:"deviceAuthorizationEndpoint,omitempty"`
	RegistrationEndpoint              string   `json:"registrationEndpoint,omitempty"`
	RevocationEndpoint                string   `json:"revocationEndpoint,omitempty"`
	GrantTypes                        []string `json:"grantTypes"`
	TokenEndpointAuthMethods          []string `json:"tokenEndpointAuthMethods"`
	CodeChallengeMethods              []string `json:"codeChallengeMethods"`
	ClientIDMetadataDocumentSupported bool     `json:"clientIdMetadataDocumentSupported"`
	IssParameterSupported             bool     `json:"issParameterSupported"`
}

// discoverDocument is info as discover --json's document.
func discoverDocument(info *client.TargetInfo) discoverDoc {
	doc := discoverDoc{Target: wire.RedactTarget(info.Target), Kind: info.Kind, HTTPStatus: info.Status,
		MetadataURL: info.MetadataURL, Legacy: info.Legacy, Warnings: nonNil(info.Warnings), Requirements: []requirementDoc{}}
	if info.Kind == client.KindAgentHost {
		doc.Dialect = info.Dialect.String()
		if len(info.AuthMethods) > 0 && len(info.Requirements) == 0 {
			doc.AuthMethods = acpMethodDocs(info)
		}
	}
	for _, r := range info.Requirements {
		rd := requirementDoc{SchemeID: r.SchemeID, Label: r.Label, Resource: r.Resource,
			AuthorizationServers: nonNil(r.AuthorizationServers), ScopesSupported: nonNil(r.ScopesSupported),
			ChallengeScope: r.ChallengeScope, Required: r.Required}
		if md := r.AuthServer; md != nil {
			rd.AuthorizationServer = &authServerDoc{
				Issuer: md.Issuer, AuthorizationEndpoint: md.AuthorizationEndpoint, TokenEndpoint: md.TokenEndpoint,
				DeviceAuthorizationEndpoint: md.DeviceAuthorizationEndpoint, RegistrationEndpoint: md.RegistrationEndpoint,
				RevocationEndpoint: md.RevocationEndpoint, GrantTypes: client.GrantTypes(md),
				TokenEndpointAuthMethods:          nonNil(md.TokenEndpointAuthMethodsSupported),
				CodeChallengeMethods:              nonNil(md.CodeChallengeMethodsSupported),
				ClientIDMetadataDocumentSupported: md.ClientIDMetadataDocumentSupported,
				IssParameterSupported:             md.AuthorizationResponseIssParameterSupported,
			}
			rd.Registration = client.RegistrationOptions(md)
		}
		if r.Err != nil {
			rd.Error = r.Err.Error()
		}
		doc.Requirements = append(doc.Requirements, rd)
	}
	return doc
}

// nonNil makes an absent list print as [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
