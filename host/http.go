package host

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentauth/agentauth/mcpserver"
	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// WellKnownResourceMetadata is the RFC 9728 §3 well-known path prefix.
const WellKnownResourceMetadata = resource.WellKnownResourceMetadata

// ResourceMetadataURL is where the host's RFC 9728 document is served: the
// well-known prefix inserted between the resource's host and its path
// (RFC 9728 §3.1), e.g. http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp.
func (h *Host) ResourceMetadataURL() string { return resource.MetadataURL(h.cfg.Resource) }

// HTTPHandler serves the host's HTTP face (PROTOCOL.md "HTTP resource"),
// to be mounted as the catch-all of a mux: the MCP face of package
// mcpserver (its RFC 9728 document, and POST on the resource's path with
// a bearer token per request), with the host as its Backend, so that it
// also answers the host's methods and the broker's tools, and tokens
// checked by VerifyBearer.
func (h *Host) HTTPHandler() http.Handler {
	return mcpserver.New(mcpserver.Options{
		Resource:    h.cfg.Resource,
		MetadataURL: h.ResourceMetadataURL(),
		Metadata:    h.ProtectedResourceMetadata,
		Verify:      h.VerifyBearer,
		Backend:     h,
		Version:     h.version,
		MaxBody:     h.maxMsg,
		Now:         h.now,
		Origin:      GuardedOrigin,
		DPoPProofs:  h.dpopProofs,
		Fixtures:    h.fixtures,
	})
}

// VerifyBearer is the resource.Verifier of the HTTP face: it validates the
// request's token through the grant cache (see ValidateBearer): 401
// without a token (no error code, RFC 6750 §3.1) or with a rejected one
// (invalid_token), 503 when it cannot be checked. A handler outside the
// host protects itself with the host's schemes by
// resource.RequireBearerToken(h.VerifyBearer, …).
func (h *Host) VerifyBearer(ctx context.Context, token string) (*Grant, *resource.Refusal) {
	return h.verifyAmong(ctx, h.r().mcp, token)
}

// HasResource reports whether a scheme has res as its resource.
func (h *Host) HasResource(res string) bool { return len(h.schemesAt(res)) > 0 }

// VerifierAt is VerifyBearer for another resource of this server than the
// host's own: the schemes whose resource is res (a gateway backend served
// at its own path, with its own RFC 9728 document). A reload that removes
// them leaves the resource answering 503.
func (h *Host) VerifierAt(res string) resource.Verifier {
	return func(ctx context.Context, token string) (*Grant, *resource.Refusal) {
		schemes := h.schemesAt(res)
		if len(schemes) == 0 {
			return nil, &resource.Refusal{Status: http.StatusServiceUnavailable,
				Err: wire.Errorf(wire.CodeInternalError, "internal error: no scheme of the running config has the resource %s", res)}
		}
		return h.verifyAmong(ctx, schemes, token)
	}
}

// verifyAmong is VerifyBearer over the given schemes (not empty).
func (h *Host) verifyAmong(ctx context.Context, schemes []*scheme, token string) (*Grant, *resource.Refusal) {
	if token == "" {
		_, ch, _ := h.validateAmong(ctx, schemes, "")
		h.refused.Add(1)
		h.log.Info("auth decision", "face", "http", "scheme", ch.SchemeID, "outcome", "denied", "reason", ch.Error+": "+ch.ErrorDescription)
		h.tel.Refusal("no_token")
		return nil, &resource.Refusal{Status: http.StatusUnauthorized, Challenge: map[string]string{"scope": ch.Scope},
			Err: h.authRequired([]wire.Challenge{*ch})}
	}
	g, ch, err := h.validateAmong(ctx, schemes, token)
	switch {
	case err != nil:
		return nil, &resource.Refusal{Status: http.StatusServiceUnavailable,
			Err: wire.Errorf(wire.CodeInternalError, "internal error: cannot validate the token now; try again later")}
	case ch != nil:
		return nil, &resource.Refusal{Status: http.StatusUnauthorized,
			Challenge: map[string]string{"error": ch.Error, "error_description": ch.ErrorDescription, "scope": ch.Scope},
			Err:       h.authRequired([]wire.Challenge{*ch})}
	}
	return g, nil
}

// CallTool runs the host's one MCP tool, upstream_call (see Tools;
// mcpserver.Backend).
func (h *Host) CallTool(ctx context.Context, g *Grant, _ string, args, responses map[string]json.RawMessage, req mcpserver.Request) (map[string]any, *wire.Error) {
	return h.callUpstream(ctx, g, args, responses, req)
}

// Answer is Dispatch for one grant (mcpserver.Backend): a call of a
// concrete method, so the grant's slice stays on the stack.
func (h *Host) Answer(ctx context.Context, req *wire.Message, g *Grant) *wire.Message {
	return h.Dispatch(ctx, req, g)
}
