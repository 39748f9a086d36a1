package host

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/agentauth/agentauth/wire"
)

// initialize answers both dialects (PROTOCOL.md "initialize"): the design
// dialect's resourceMetadata always, and, when the client offered
// protocolVersions, the published dialect's version and a root snapshot if
// initialSubscriptions lists the root channel (reported as root).
func (h *Host) initialize(params json.RawMessage) (any, wire.Dialect, bool, *wire.Error) {
	var p wire.InitializeParams
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, 0, false, wire.Errorf(wire.CodeInvalidParams, "invalid params: %v", err)
		}
	}
	d := p.Dialect()
	root := false
	fixed := h.r().initFixed(h)
	if fixed.err != nil {
		return nil, 0, false, wire.Errorf(wire.CodeInternalError, "internal error: cannot encode the resource metadata")
	}
	res := &initializeResult{ServerSeq: h.seq.Load(), Snapshots: []any{}, ResourceMetadata: fixed.resourceMetadata,
		AgentCapabilities: agentCapabilities, AuthMethods: fixed.authMethodsJSON}
	var rerr *wire.Error
	switch d {
	case wire.DialectPublished:
		root, rerr = h.initializePublished(p, res)
	case wire.DialectACP:
		return h.initializeACP(fixed), d, false, nil
	default:
		rerr = initializeDesign(p, res)
	}
	if rerr != nil {
		return nil, d, false, rerr
	}
	return res, d, root, nil
}

// initializeResult is initialize's answer in every dialect; its members
// are in the order encoding/json writes a map's (sorted by name).
type initializeResult struct {
	// AccountRevocation and ServerInfo are AHP 1.x's (absent before).
	AccountRevocation json.RawMessage   `json:"accountRevocation,omitempty"`
	AgentCapabilities any               `json:"agentCapabilities"`
	AgentInfo         map[string]string `json:"agentInfo,omitempty"`
	// AuthMethods is a []wire.AuthMethod or its JSON.
	AuthMethods      any               `json:"authMethods"`
	ProtocolVersion  any               `json:"protocolVersion"`
	ResourceMetadata json.RawMessage   `json:"resourceMetadata"`
	ServerInfo       map[string]string `json:"serverInfo,omitempty"`
	ServerSeq        int64             `json:"serverSeq"`
	// Snapshots are wire.Snapshot (the root channel) and
	// wire.SessionSnapshot values.
	Snapshots []any `json:"snapshots"`
}

// The agent capabilities initialize announces: the design and published
// dialects' flags, and ACP's: auth.logout (an object whose presence is the
// flag, schema 1.7.0), auth.status (RFD get-auth-state: auth/status) and
// getAuthState (seed 003's name of the same query).
var (
	agentCapabilities    = json.RawMessage(`{"auth":{"status":true},"getAuthState":true}`)
	acpAgentCapabilities = json.RawMessage(`{"auth":{"logout":{},"status":true},"getAuthState":true}`)
)

// initFixed is the part of initialize's answer that depends on the
// schemes only, built once per config (a reload builds new
// requirements) rather than per connection.
type initFixed struct {
	resourceMetadata json.RawMessage
	authMethods      []wire.AuthMethod
	authMethodsJSON  json.RawMessage
	err              error
}

// initFixed builds, on first use, what initialize says about r's schemes:
// the design dialect's resourceMetadata and an ACP auth method per scheme.
func (r *requirements) initFixed(h *Host) *initFixed {
	r.initOnce.Do(func() {
		rm := wire.ResourceMetadata{Resource: h.cfg.Resource, AuthSchemes: []wire.AuthScheme{}}
		methods := []wire.AuthMethod{}
		for _, sc := range r.schemes {
			as := sc.AuthorizationServers
			if as == nil {
				as = []string{}
			}
			rm.AuthSchemes = append(rm.AuthSchemes, wire.AuthScheme{Scheme: wire.SchemeBearer, ID: sc.ID, Label: sc.Label, Resource: sc.Resource,
				AuthorizationServers: as, ScopesSupported: sc.ScopesSupported, Required: sc.IsRequired()})
			desc := "bearer token"
			if len(as) > 0 {
				desc += " from " + strings.Join(as, ", ")
			}
			methods = append(methods, wire.AuthMethod{ID: sc.ID, Name: cmp.Or(sc.Label, sc.ID), Description: desc, Type: "agent",
				Meta: map[string]any{wire.ACPOAuthMetaKey: h.metadata(sc)}})
		}
		f := &initFixed{authMethods: methods}
		if f.resourceMetadata, f.err = json.Marshal(rm); f.err == nil {
			f.authMethodsJSON, f.err = json.Marshal(methods)
		}
		r.init = f
	})
	return r.init
}
