package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/wire"
)

// discoverClientID is the clientId discover and login send with initialize.
const discoverClientID = "agentauth-discover"

// discoverTimeout bounds connecting and initialize for an agent host; each
// HTTP fetch has its own 10 s bound (flows.DefaultFetchTimeout).
const discoverTimeout = 30 * time.Second

// Target kinds in discover's output.
const (
	kindAgentHost = "agent-host"
	kindHTTP      = "http"
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
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, opts)
		},
	}
}

func runDiscover(ctx context.Context, opts *DiscoverOptions) error {
	info, err := discoverTarget(ctx, opts.HTTPClient, opts.IO.ErrOut, opts.Target)
	if err != nil {
		return err
	}
	info.Close()
	for _, w := range info.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "%s %s\n", opts.IO.ErrPainter().Yellow("warning:"), safeText(w))
	}
	if opts.JSON {
		b, err := json.MarshalIndent(info.document(), "", "  ")
		if err != nil {
			return fmt.Errorf("cannot print the discovery: %w", err)
		}
		fmt.Fprintln(opts.IO.Out, string(b))
	} else {
		info.print(opts.IO.Out, opts.IO.OutPainter())
	}
	var failed []string
	for _, r := range info.Requirements {
		if r.Err != nil {
			failed = append(failed, r.name())
		}
	}
	if len(failed) > 0 {
		if !opts.JSON {
			for _, r := range info.Requirements {
				if r.Err != nil {
					fmt.Fprintf(opts.IO.ErrOut, "agentauth: %s: %s\n", safeText(r.name()), safeText(r.Err.Error()))
				}
			}
		}
		return &SilentError{Code: ExitError}
	}
	return nil
}

// targetInfo is what discovery learnt about a target.
type targetInfo struct {
	Target string
	Kind   string
	// Dialect is the agent host's dialect.
	Dialect wire.Dialect
	// Status is the HTTP status of the unauthenticated request.
	Status int
	// MetadataURL is where the protected resource metadata was found.
	MetadataURL string
	// Legacy marks the MCP 2025-03-26 fallback.
	Legacy       bool
	Warnings     []string
	Requirements []*requirementInfo
	// host is the agent host's connection, kept open until Close: a stdio
	// host's embedded issuer lives only as long as the child process.
	host *wire.Client
}

// Close closes the agent host connection, if any.
func (info *targetInfo) Close() {
	if info.host != nil {
		info.host.Close()
	}
}

// requirementInfo is one auth requirement with its authorization server's
// metadata (or why it could not be used).
type requirementInfo struct {
	wire.Requirement
	// ChallengeScope is the scope of the target's Bearer challenge (HTTP),
	// or the scope a step-up asks for.
	ChallengeScope string
	// AuthServer is the first authorization server's checked metadata.
	AuthServer *wire.AuthServerMetadata
	// Err is why AuthServer is missing.
	Err error
}

// name labels a requirement in messages: its scheme id, else its resource.
func (r *requirementInfo) name() string {
	if r.SchemeID != "" {
		return r.SchemeID
	}
	return r.Resource
}

// isHTTPTarget reports whether target is an MCP server / protected resource
// rather than an agent host.
func isHTTPTarget(target string) bool {
	l := strings.ToLower(target)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// discoverTarget finds a target's requirements and fetches each one's
// authorization server metadata (RFC 8414 / OpenID Connect, checked by
// flows). A failure to reach the target is an error; a failing authorization
// server is recorded in its requirement. The caller must Close the result.
func discoverTarget(ctx context.Context, hc *http.Client, stderr io.Writer, target string) (*targetInfo, error) {
	if isHTTPTarget(target) {
		d, err := flows.DiscoverResource(ctx, hc, target)
		if err != nil {
			return nil, err
		}
		return httpTargetInfo(ctx, hc, d), nil
	}
	res, client, err := initializeHost(ctx, hc, stderr, target)
	if err != nil {
		return nil, err
	}
	info := &targetInfo{Target: target, Kind: kindAgentHost, Dialect: res.Dialect(), host: client}
	for _, req := range res.Requirements() {
		info.Requirements = append(info.Requirements, &requirementInfo{Requirement: req})
	}
	if len(info.Requirements) == 0 {
		info.Warnings = append(info.Warnings, wire.RedactTarget(target)+" declares no auth requirement")
	}
	for _, r := range info.Requirements {
		if len(r.AuthorizationServers) == 0 {
			r.Err = flows.ErrNoAuthorizationServers
			continue
		}
		if err := flows.CheckURL(r.Resource); err != nil {
			r.Err = fmt.Errorf("cannot use the resource: %w", err)
			continue
		}
		r.AuthServer, r.Err = flows.FetchAuthServerMetadata(ctx, hc, r.AuthorizationServers[0])
	}
	return info, nil
}

// httpTargetInfo is what the resource discovery d of an HTTP target says:
// its one requirement, with the first authorization server's checked
// metadata (or, in the MCP 2025-03-26 fallback, its default endpoints).
func httpTargetInfo(ctx context.Context, hc *http.Client, d *flows.ResourceDiscovery) *targetInfo {
	info := &targetInfo{Target: d.Target, Kind: kindHTTP, Status: d.Status, MetadataURL: d.MetadataURL, Legacy: d.Legacy}
	if d.Warning != "" {
		info.Warnings = append(info.Warnings, d.Warning)
	}
	r := &requirementInfo{ChallengeScope: d.Scope, Requirement: wire.Requirement{
		Resource: d.Resource, AuthorizationServers: d.AuthorizationServers, ScopesSupported: d.ScopesSupported(), Required: true}}
	if d.Metadata != nil {
		r.Label = d.Metadata.ResourceName
	}
	if err := flows.CheckURL(r.Resource); err != nil {
		r.Err = fmt.Errorf("cannot use the resource: %w", err)
	} else {
		r.AuthServer, r.Err = flows.DiscoverAuthServer(ctx, hc, d)
	}
	info.Requirements = []*requirementInfo{r}
	return info
}

// initializeHost connects to an agent host and runs initialize in the
// design dialect, and again in the published dialect when the host
// supports no design version (-32005). The connection stays open.
func initializeHost(ctx context.Context, hc *http.Client, stderr io.Writer, target string) (*wire.InitializeResult, *wire.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	res, client, err := initializeIn(ctx, hc, stderr, target, wire.DialectDesign)
	var rpc *wire.Error
	if errors.As(err, &rpc) && rpc.Code == wire.CodeUnsupportedVersion {
		res, client, err = initializeIn(ctx, hc, stderr, target, wire.DialectPublished)
	}
	return res, client, err
}

func initializeIn(ctx context.Context, hc *http.Client, stderr io.Writer, target string, d wire.Dialect) (*wire.InitializeResult, *wire.Client, error) {
	conn, err := wire.DialTarget(ctx, target, wire.DialOptions{HTTPClient: hc, Stderr: stderr})
	if err != nil {
		return nil, nil, err
	}
	client := wire.NewClient(conn)
	res, err := wire.Initialize(ctx, client, d, discoverClientID)
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("cannot initialize %s: %w", wire.RedactTarget(target), err)
	}
	return res, client, nil
}

// registrationOptions lists how a client can be obtained from an
// authorization server, in the order login tries them (the stored
// registration aside): preregistered (--client-id) always, cimd when the
// server accepts client ID metadata documents, dcr when it has a
// registration endpoint (RFC 7591).
func registrationOptions(md *wire.AuthServerMetadata) []string {
	out := []string{"preregistered"}
	if md.ClientIDMetadataDocumentSupported {
		out = append(out, "cimd")
	}
	if md.RegistrationEndpoint != "" {
		out = append(out, "dcr")
	}
	return out
}

var registrationLabels = map[string]string{
	"preregistered": "pre-registered client (--client-id)",
	"cimd":          "client ID metadata document (--client-metadata-url)",
	"dcr":           "dynamic registration (RFC 7591)",
}

// grantTypes is what the authorization server offers, with the RFC 8414
// default when it does not say.
func grantTypes(md *wire.AuthServerMetadata) []string {
	g := md.GrantTypesSupported
	if len(g) == 0 {
		g = []string{wire.GrantAuthorizationCode, "implicit"}
	}
	if md.DeviceAuthorizationEndpoint != "" && !slices.Contains(g, wire.GrantDeviceCode) {
		g = append(slices.Clone(g), wire.GrantDeviceCode)
	}
	return g
}

func (info *targetInfo) print(w io.Writer, p Painter) {
	for i, r := range info.Requirements {
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := r.name()
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
		row("required", yesNo(r.Required))
		if md := r.AuthServer; md != nil {
			row("grant types", strings.Join(grantTypes(md), ", "))
			var regs []string
			for _, o := range registrationOptions(md) {
				regs = append(regs, registrationLabels[o])
			}
			row("registration", strings.Join(regs, ", "))
		} else if r.Err != nil {
			row("error", p.Red(safeText(r.Err.Error())))
		}
		tw.Flush()
	}
	if len(info.Requirements) == 0 {
		fmt.Fprintf(w, "%s declares no auth requirement.\n", wire.RedactTarget(info.Target))
	}
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

func (info *targetInfo) document() discoverDoc {
	doc := discoverDoc{Target: wire.RedactTarget(info.Target), Kind: info.Kind, HTTPStatus: info.Status,
		MetadataURL: info.MetadataURL, Legacy: info.Legacy, Warnings: nonNil(info.Warnings), Requirements: []requirementDoc{}}
	if info.Kind == kindAgentHost {
		doc.Dialect = info.Dialect.String()
	}
	for _, r := range info.Requirements {
		rd := requirementDoc{SchemeID: r.SchemeID, Label: r.Label, Resource: r.Resource,
			AuthorizationServers: nonNil(r.AuthorizationServers), ScopesSupported: nonNil(r.ScopesSupported),
			ChallengeScope: r.ChallengeScope, Required: r.Required}
		if md := r.AuthServer; md != nil {
			rd.AuthorizationServer = &authServerDoc{
				Issuer: md.Issuer, AuthorizationEndpoint: md.AuthorizationEndpoint, TokenEndpoint: md.TokenEndpoint,
				DeviceAuthorizationEndpoint: md.DeviceAuthorizationEndpoint, RegistrationEndpoint: md.RegistrationEndpoint,
				RevocationEndpoint: md.RevocationEndpoint, GrantTypes: grantTypes(md),
				TokenEndpointAuthMethods:          nonNil(md.TokenEndpointAuthMethodsSupported),
				CodeChallengeMethods:              nonNil(md.CodeChallengeMethodsSupported),
				ClientIDMetadataDocumentSupported: md.ClientIDMetadataDocumentSupported,
				IssParameterSupported:             md.AuthorizationResponseIssParameterSupported,
			}
			rd.Registration = registrationOptions(md)
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
