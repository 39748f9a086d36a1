package wire

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Method names of PROTOCOL.md.
const (
	MethodInitialize   = "initialize"
	MethodPing         = "ping"
	MethodAuthenticate = "authenticate"
	// MethodGetAuthState and MethodAuthStatus are one pure query under the
	// names of the ACP design (seed 003) and the published protocol.
	MethodGetAuthState = "getAuthState"
	MethodAuthStatus   = "auth/status"
	// MethodAuthStatusUpdate is the push of the authStatus extension that
	// claude-agent-acp and codex-acp ship (an interim ACP extension in
	// _meta, ahead of an RFD): {authStatus: {kind, label, detail?}}, kind
	// "none" for logged out, sent after initialize and when the identity
	// changes; advertised by agentCapabilities._meta.authStatus
	// (AgentCapabilities.PushesAuthStatus). There is no request to ask.
	MethodAuthStatusUpdate = "_auth/status_update"
	// MethodSetAuthToken is the deprecated token push (a notification).
	MethodSetAuthToken = "setAuthToken"
	// MethodNotifyAuthRequired is the design dialect's auth-state push.
	MethodNotifyAuthRequired = "notify/authRequired"
	// MethodAuthRequired is the published dialect's auth-state push.
	MethodAuthRequired = "auth/required"

	// MethodSubscribe and MethodUnsubscribe (a notification) open and close
	// a channel subscription (AHP subscriptions.md).
	MethodSubscribe   = "subscribe"
	MethodUnsubscribe = "unsubscribe"

	// MethodLogout is ACP's logout (agentCapabilities.auth.logout).
	MethodLogout = "logout"

	MethodCreateSession  = "createSession"
	MethodListSessions   = "listSessions"
	MethodDisposeSession = "disposeSession"
	MethodWhoami         = "whoami"
	MethodEcho           = "echo"
)

// Dialect says which shape of the protocol a peer speaks.
type Dialect int

const (
	// DialectDesign is the seed-001 design: protocolVersion 1, resourceMetadata,
	// {schemeId, scheme, token}, notify/authRequired.
	DialectDesign Dialect = iota
	// DialectPublished is AHP 0.9: protocolVersions, protectedResources,
	// {resource, token}, auth/required.
	DialectPublished
	// DialectACP is the Agent Client Protocol: protocolVersion 1 with
	// clientCapabilities or clientInfo, authenticate {methodId}, -32000
	// AuthRequired, logout.
	DialectACP
)

func (d Dialect) String() string {
	switch d {
	case DialectPublished:
		return "published"
	case DialectACP:
		return "acp"
	}
	return "design"
}

// CodeACPAuthRequired is ACP's AuthRequired error code (ErrorCode
// auth_required in the ACP schema).
const CodeACPAuthRequired = -32000

// ACPTokenMetaKey is the _meta key under which an ACP client may hand
// authenticate a bearer token for an agent-type method (ACP
// extensibility: _meta).
const ACPTokenMetaKey = "agentauth.dev/token"

// DesignProtocolVersion is the design dialect's protocol version number.
const DesignProtocolVersion = 1

// PublishedProtocolVersions are the AHP versions this implementation
// offers as a client, most preferred first (AHP
// types/version/registry.ts: PROTOCOL_VERSION 1.1.0,
// SUPPORTED_PROTOCOL_VERSIONS 1.0.0 and 0.9.0); a host picks the newest
// it speaks.
var PublishedProtocolVersions = []string{"1.1.0", "1.0.0", "0.9.0"}

// PublishedSupportedVersions are the SemVer ranges of AHP versions the
// host speaks, as -32005's data lists them (AHP types/common/errors.ts,
// UnsupportedProtocolVersionErrorData).
var PublishedSupportedVersions = []string{"^1.0.0", "^0.9.0"}

// ConnectionClientID is the published dialect's clientId for one
// connection: prefix and a random UUID (RFC 9562 §5.4). VS Code's agent
// host treats connections with one clientId as one client and sends its
// actions and notifications to the newest of them only
// (src/vs/platform/agentHost/node/protocolServerHandler.ts,
// _attachConnection and _getActiveClientFromRecord), and VS Code's own
// client sends generateUuid() (browser/remoteAgentHostProtocolClient.ts):
// two agentauth processes sharing a fixed clientId would take each other's
// pushes.
func ConnectionClientID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// RootChannel is the channel of the published dialect's root agent.
const RootChannel = "ahp-root://"

// SchemeBearer is the only scheme agentauth implements (RFC 6750).
const SchemeBearer = "bearer"

// InitializeParams carries both dialects: ProtocolVersion (design) or
// ProtocolVersions (published).
type InitializeParams struct {
	ProtocolVersion  *int     `json:"protocolVersion,omitempty"`
	Channel          string   `json:"channel,omitempty"`
	ProtocolVersions []string `json:"protocolVersions,omitempty"`
	ClientID         string   `json:"clientId,omitempty"`
	// InitialSubscriptions are the channels the published dialect's client
	// subscribes to in the handshake; the host answers a snapshot for each.
	InitialSubscriptions []string `json:"initialSubscriptions,omitempty"`
	// ClientCapabilities and ClientInfo mark an ACP client.
	ClientCapabilities json.RawMessage `json:"clientCapabilities,omitempty"`
	ClientInfo         json.RawMessage `json:"clientInfo,omitempty"`
}

// Dialect reports which dialect the params ask for: protocolVersions is
// AHP's; clientCapabilities or clientInfo without a clientId ACP's; a
// clientId with protocolVersion 1 the design dialect's, even with ACP's
// members, which agentauth's client adds so that one initialize serves an
// agent host and an ACP agent alike (NewInitializeParams).
func (p InitializeParams) Dialect() Dialect {
	switch {
	case len(p.ProtocolVersions) > 0:
		return DialectPublished
	case (p.ClientCapabilities != nil || p.ClientInfo != nil) && p.ClientID == "":
		return DialectACP
	}
	return DialectDesign
}

// AuthScheme is one declared requirement in the design dialect's
// resourceMetadata.authSchemes.
type AuthScheme struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Label  string `json:"label,omitempty"`
	// Resource is the scheme's own resource identifier (the audience its
	// tokens carry); absent, the ResourceMetadata's.
	Resource             string   `json:"resource,omitempty"`
	AuthorizationServers []string `json:"authorizationServers"`
	ScopesSupported      []string `json:"scopesSupported,omitempty"`
	Required             bool     `json:"required"`
}

// ResourceMetadata is the design dialect's initialize result member.
type ResourceMetadata struct {
	Resource    string       `json:"resource"`
	AuthSchemes []AuthScheme `json:"authSchemes"`
}

// AgentCapabilities advertises the optional queries: getAuthState
// (PROTOCOL.md's name), auth.status (ACP RFD get-auth-state: the
// auth/status method) and auth.logout (ACP schema 1.7.0,
// AgentAuthCapabilities).
type AgentCapabilities struct {
	GetAuthState bool `json:"getAuthState,omitempty"`
	Auth         *struct {
		Status bool            `json:"status,omitempty"`
		Logout json.RawMessage `json:"logout,omitempty"`
	} `json:"auth,omitempty"`
	// Meta is the capabilities' _meta, where an agent of the authStatus
	// extension says (authStatus: {}) that it pushes
	// MethodAuthStatusUpdate.
	Meta *struct {
		AuthStatus json.RawMessage `json:"authStatus,omitempty"`
	} `json:"_meta,omitempty"`
}

// PushesAuthStatus reports whether the agent advertises the authStatus
// extension's push (_meta.authStatus, {} rather than absent or null).
func (c AgentCapabilities) PushesAuthStatus() bool {
	return c.Meta != nil && len(c.Meta.AuthStatus) > 0 && string(c.Meta.AuthStatus) != "null"
}

// CanLogout reports whether ACP's logout is advertised ({} rather than
// absent or null).
func (c AgentCapabilities) CanLogout() bool {
	return c.Auth != nil && len(c.Auth.Logout) > 0 && string(c.Auth.Logout) != "null"
}

// CanQueryAuthState reports whether either auth-state query is advertised.
func (c AgentCapabilities) CanQueryAuthState() bool {
	return c.GetAuthState || (c.Auth != nil && c.Auth.Status)
}

// Snapshot is the published dialect's state snapshot: FromSeq is the
// serverSeq the state reflects (AHP lifecycle.md).
type Snapshot struct {
	Resource string        `json:"resource"`
	State    SnapshotState `json:"state"`
	FromSeq  int64         `json:"fromSeq"`
}

// SubscribeParams names the channel to subscribe to (or, for the
// unsubscribe notification, to leave).
type SubscribeParams struct {
	Channel string `json:"channel"`
}

// SubscribeResult is subscribe's answer: the channel's snapshot.
type SubscribeResult struct {
	Snapshot *Snapshot `json:"snapshot,omitempty"`
}

// SessionSnapshot is a session channel's snapshot (AHP
// types/common/state.ts, Snapshot, whose state is a SessionState).
type SessionSnapshot struct {
	Resource string       `json:"resource"`
	State    SessionState `json:"state"`
	FromSeq  int64        `json:"fromSeq"`
}

// SessionState is the minimal state of a session channel: its summary,
// lifecycle and turns (AHP types/channels-session/state.ts, SessionState,
// as VS Code's protocol 0.9.0 copy has it); Turns are kept raw.
type SessionState struct {
	Summary   SessionSummary    `json:"summary"`
	Lifecycle string            `json:"lifecycle"`
	Turns     []json.RawMessage `json:"turns"`
}

// SessionSummary is AHP's SessionSummary (types/channels-session/state.ts):
// Status is a SessionStatus bitset (SessionStatusIdle when no turn is
// active); CreatedAt and ModifiedAt are ISO 8601, as listSessions
// answers them.
type SessionSummary struct {
	Resource   string `json:"resource"`
	Provider   string `json:"provider"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	CreatedAt  string `json:"createdAt"`
	ModifiedAt string `json:"modifiedAt"`
}

// SessionStatusIdle and SessionLifecycleReady are the SessionStatus and
// SessionLifecycle of a session with no turn (AHP
// types/channels-session/state.ts).
const (
	SessionStatusIdle     = 1
	SessionLifecycleReady = "ready"
)

// SnapshotState lists the agents of a snapshot.
type SnapshotState struct {
	Agents []SnapshotAgent `json:"agents"`
}

// SnapshotAgent is the published dialect's AgentInfo (AHP
// types/channels-root/state.ts); Models are kept raw.
type SnapshotAgent struct {
	Provider           string                      `json:"provider"`
	DisplayName        string                      `json:"displayName"`
	Description        string                      `json:"description"`
	Models             []json.RawMessage           `json:"models"`
	ProtectedResources []ProtectedResourceMetadata `json:"protectedResources"`
}

// InitializeResult carries both dialects. ProtocolVersion is a number
// (design) or a string (published), so it is kept raw.
type InitializeResult struct {
	ProtocolVersion   json.RawMessage   `json:"protocolVersion"`
	ServerSeq         int64             `json:"serverSeq"`
	Snapshots         []Snapshot        `json:"snapshots"`
	ResourceMetadata  *ResourceMetadata `json:"resourceMetadata,omitempty"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []AuthMethod      `json:"authMethods,omitempty"`
	// AgentInfo is an ACP agent's Implementation {name, title, version}.
	AgentInfo *Implementation `json:"agentInfo,omitempty"`
	// Meta, AccountRevocation and Authentication are AHP 1.x's
	// InitializeResult _meta, accountRevocation (present: the host takes
	// auth/revoked; types/authentication.test.ts) and authentication
	// (flows the host admits: docs/specification/accounts-channel.md).
	Meta              map[string]any              `json:"_meta,omitempty"`
	AccountRevocation json.RawMessage             `json:"accountRevocation,omitempty"`
	Authentication    *AuthenticationCapabilities `json:"authentication,omitempty"`
}

// IsACPAgent reports whether a design-dialect initialize was answered by
// an ACP agent rather than an agent host: a numeric protocolVersion with
// neither resourceMetadata nor snapshots.
func (r *InitializeResult) IsACPAgent() bool {
	return r.Dialect() == DialectDesign && r.ResourceMetadata == nil && len(r.Snapshots) == 0
}

// Requirement is one auth requirement as a client understands it, read from
// either dialect.
type Requirement struct {
	SchemeID             string   `json:"schemeId,omitempty"`
	Label                string   `json:"label,omitempty"`
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorizationServers"`
	ScopesSupported      []string `json:"scopesSupported,omitempty"`
	Required             bool     `json:"required"`
}

// Requirements reads the declared requirements from whichever dialect the
// result carries, preferring resourceMetadata when both are present.
func (r *InitializeResult) Requirements() []Requirement {
	var out []Requirement
	if r.ResourceMetadata != nil {
		for _, s := range r.ResourceMetadata.AuthSchemes {
			out = append(out, Requirement{SchemeID: s.ID, Label: s.Label, Resource: cmp.Or(s.Resource, r.ResourceMetadata.Resource),
				AuthorizationServers: s.AuthorizationServers, ScopesSupported: s.ScopesSupported, Required: s.Required})
		}
		return out
	}
	if len(r.Snapshots) == 0 {
		return r.acpRequirements()
	}
	// Several agents may list one protected resource (VS Code's Copilot
	// CLI and Claude agents both name GitHub's), and one authenticate
	// serves them all (VS Code's node/agentService.ts, authenticate): it
	// is one requirement, required if any agent requires it.
	for _, snap := range r.Snapshots {
		for _, a := range snap.State.Agents {
			for _, p := range a.ProtectedResources {
				req := true
				if p.Required != nil {
					req = *p.Required
				}
				i := slices.IndexFunc(out, func(o Requirement) bool { return o.SchemeID == p.SchemeID && o.Resource == p.Resource })
				if i < 0 {
					out = append(out, Requirement{SchemeID: p.SchemeID, Label: p.ResourceName, Resource: p.Resource,
						AuthorizationServers: p.AuthorizationServers, ScopesSupported: p.ScopesSupported, Required: req})
					continue
				}
				o := &out[i]
				o.Required = o.Required || req
				for _, as := range p.AuthorizationServers {
					if !slices.Contains(o.AuthorizationServers, as) {
						o.AuthorizationServers = append(o.AuthorizationServers, as)
					}
				}
				for _, sc := range p.ScopesSupported {
					if !slices.Contains(o.ScopesSupported, sc) {
						o.ScopesSupported = append(o.ScopesSupported, sc)
					}
				}
			}
		}
	}
	return out
}

// Dialect reports the dialect the server answered in.
func (r *InitializeResult) Dialect() Dialect {
	if len(r.ProtocolVersion) > 0 && r.ProtocolVersion[0] == '"' {
		return DialectPublished
	}
	return DialectDesign
}

// AuthenticateParams carries both dialects: SchemeID+Scheme (design) or
// Channel+Resource (published).
type AuthenticateParams struct {
	SchemeID  string   `json:"schemeId,omitempty"`
	Scheme    string   `json:"scheme,omitempty"`
	Channel   string   `json:"channel,omitempty"`
	Resource  string   `json:"resource,omitempty"`
	Token     string   `json:"token"`
	Scopes    []string `json:"scopes,omitempty"`
	ExpiresIn *int64   `json:"expiresIn,omitempty"`
	// MethodID is ACP's authenticate param; Meta may carry a token under
	// ACPTokenMetaKey.
	MethodID string         `json:"methodId,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
	// Account and Binding are AHP 1.x's (types/authentication.test.ts,
	// accounts-channel.md).
	Account *AuthenticationAccount `json:"account,omitempty"`
	Binding *AuthenticationBinding `json:"binding,omitempty"`
}

// AuthenticateResult is authenticate's success result: the design
// dialect's {"authenticated": bool}, or the published dialect's {}
// (Authenticated nil), which is a success.
type AuthenticateResult struct {
	Authenticated *bool `json:"authenticated,omitempty"`
	// AccountID is a bound delivery's host account (AHP 1.x).
	AccountID string `json:"accountId,omitempty"`
}

// Auth states of notify/authRequired (design dialect).
const (
	StateAuthenticated = "authenticated"
	StateExpired       = "expired"
	StateRevoked       = "revoked"
	StateRequired      = "required"
)

// NotifyAuthRequiredParams is the design dialect's push.
type NotifyAuthRequiredParams struct {
	SchemeID  string     `json:"schemeId"`
	Resource  string     `json:"resource"`
	State     string     `json:"state"`
	Challenge *Challenge `json:"challenge,omitempty"`
}

// AuthRequiredParams is the published dialect's push; Reason is "required"
// or "expired" (which AHP's AuthRequiredReason defines as "expired or
// revoked").
type AuthRequiredParams struct {
	Channel  string                    `json:"channel"`
	Resource ProtectedResourceMetadata `json:"resource"`
	Reason   string                    `json:"reason"`
}

// AuthStateResult answers getAuthState / auth/status (seed 003).
type AuthStateResult struct {
	Authenticated bool              `json:"authenticated"`
	AuthMethods   []AuthMethodState `json:"authMethods"`
	Message       string            `json:"message,omitempty"`
}

// AuthMethodState is one scheme's state in AuthStateResult.
type AuthMethodState struct {
	AuthMethodID  string `json:"authMethodId"`
	Authenticated bool   `json:"authenticated"`
	Message       string `json:"message,omitempty"`
}

// SetAuthTokenParams is the deprecated notification's object form; a bare
// string param is accepted too (see ParseSetAuthToken).
type SetAuthTokenParams struct {
	Token string `json:"token"`
}

// ParseSetAuthToken reads setAuthToken's params in either accepted shape.
func ParseSetAuthToken(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var p SetAuthTokenParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("setAuthToken params must be a string or {\"token\": string}")
	}
	return p.Token, nil
}

// UnsupportedVersionData is -32005's data.
type UnsupportedVersionData struct {
	SupportedVersions []string `json:"supportedVersions"`
}

// WhoamiScheme is one authenticated scheme as whoami reports it: never the token.
type WhoamiScheme struct {
	SchemeID  string   `json:"schemeId"`
	Subject   string   `json:"subject"`
	ClientID  string   `json:"clientId,omitempty"`
	Scopes    []string `json:"scopes"`
	ExpiresAt string   `json:"expiresAt,omitempty"`
}

// SplitScope splits an RFC 6749 §3.3 scope string.
func SplitScope(s string) []string { return strings.Fields(s) }

// JoinScope joins scopes into an RFC 6749 §3.3 scope string.
func JoinScope(scopes []string) string { return strings.Join(scopes, " ") }
