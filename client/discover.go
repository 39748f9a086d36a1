package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/wire"
)

// discoverClientID is the clientId discovery sends with initialize.
const discoverClientID = "agentauth-discover"

// discoverTimeout bounds connecting and initialize for an agent host; each
// HTTP fetch has its own 10 s bound (flows.DefaultFetchTimeout).
const discoverTimeout = 30 * time.Second

// Target kinds.
const (
	KindAgentHost = "agent-host"
	KindHTTP      = "http"
)

// TargetInfo is what discovery learnt about a target.
type TargetInfo struct {
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
	Requirements []*RequirementInfo
	// AuthMethods are the ACP auth methods the agent advertises.
	AuthMethods []wire.AuthMethod
	// host is the agent host's connection, kept open until Close: a stdio
	// host's embedded issuer lives only as long as the child process.
	host *wire.Client
}

// Close closes the agent host connection, if any.
func (info *TargetInfo) Close() {
	if info.host != nil {
		info.host.Close()
	}
}

// RequirementInfo is one auth requirement with its authorization server's
// metadata (or why it could not be used).
type RequirementInfo struct {
	wire.Requirement
	// ChallengeScope is the scope of the target's Bearer challenge (HTTP),
	// or the scope a step-up asks for.
	ChallengeScope string
	// AuthServer is the first authorization server's checked metadata.
	AuthServer *wire.AuthServerMetadata
	// Err is why AuthServer is missing.
	Err error
	// DPoP says whether the resource's RFC 9728 metadata advertises DPoP
	// (dpop_signing_alg_values_supported or
	// dpop_bound_access_tokens_required); nil when no document was read.
	DPoP *bool
}

// Name labels a requirement in messages: its scheme id, else its resource.
func (r *RequirementInfo) Name() string {
	if r.SchemeID != "" {
		return r.SchemeID
	}
	return r.Resource
}

// Discover finds a target's requirements and fetches each one's
// authorization server metadata (RFC 8414 / OpenID Connect, checked by
// flows). A failure to reach the target is an error; a failing authorization
// server is recorded in its requirement. The caller must Close the result.
func Discover(ctx context.Context, hc *http.Client, stderr io.Writer, target string) (*TargetInfo, error) {
	if IsHTTPTarget(target) {
		d, err := flows.DiscoverResource(ctx, hc, target)
		if err != nil {
			return nil, err
		}
		return HTTPTargetInfo(ctx, hc, d), nil
	}
	res, client, err := initializeHost(ctx, hc, stderr, target)
	if err != nil {
		return nil, err
	}
	info := &TargetInfo{Target: target, Kind: KindAgentHost, Dialect: res.Dialect(), host: client}
	if res.IsACPAgent() {
		info.Dialect = wire.DialectACP
	}
	for _, req := range res.Requirements() {
		info.Requirements = append(info.Requirements, &RequirementInfo{Requirement: req})
	}
	info.AuthMethods = res.AuthMethods
	if len(info.Requirements) == 0 && len(info.AuthMethods) == 0 {
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

// HTTPTargetInfo is what the resource discovery d of an HTTP target says:
// its one requirement, with the first authorization server's checked
// metadata (or, in the MCP 2025-03-26 fallback, its default endpoints).
func HTTPTargetInfo(ctx context.Context, hc *http.Client, d *flows.ResourceDiscovery) *TargetInfo {
	info := &TargetInfo{Target: d.Target, Kind: KindHTTP, Status: d.Status, MetadataURL: d.MetadataURL, Legacy: d.Legacy}
	if d.Warning != "" {
		info.Warnings = append(info.Warnings, d.Warning)
	}
	r := &RequirementInfo{ChallengeScope: d.Scope, Requirement: wire.Requirement{
		Resource: d.Resource, AuthorizationServers: d.AuthorizationServers, ScopesSupported: d.ScopesSupported(), Required: true}}
	if d.Metadata != nil {
		r.Label = d.Metadata.ResourceName
		dpop := len(d.Metadata.DPoPSigningAlgValuesSupported) > 0 || d.Metadata.DPoPBoundAccessTokensRequired
		r.DPoP = &dpop
	}
	if err := flows.CheckURL(r.Resource); err != nil {
		r.Err = fmt.Errorf("cannot use the resource: %w", err)
	} else {
		r.AuthServer, r.Err = flows.DiscoverAuthServer(ctx, hc, d)
	}
	info.Requirements = []*RequirementInfo{r}
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
	conn, err := wire.DialTarget(ctx, target, hostDialOptions(hc, stderr))
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

// RegistrationOptions lists how a client can be obtained from an
// authorization server, in the order login tries them (the stored
// registration aside): preregistered (--client-id) always, cimd when the
// server accepts client ID metadata documents, dcr when it has a
// registration endpoint (RFC 7591).
func RegistrationOptions(md *wire.AuthServerMetadata) []string {
	out := []string{"preregistered"}
	if md.ClientIDMetadataDocumentSupported {
		out = append(out, "cimd")
	}
	if md.RegistrationEndpoint != "" {
		out = append(out, "dcr")
	}
	return out
}

// GrantTypes is what the authorization server offers, with the RFC 8414
// default when it does not say.
func GrantTypes(md *wire.AuthServerMetadata) []string {
	g := md.GrantTypesSupported
	if len(g) == 0 {
		g = []string{wire.GrantAuthorizationCode, "implicit"}
	}
	if md.DeviceAuthorizationEndpoint != "" && !slices.Contains(g, wire.GrantDeviceCode) {
		g = append(slices.Clone(g), wire.GrantDeviceCode)
	}
	return g
}
