package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// MCPStatelessVersion is the MCP revision without initialize and sessions
// (MCP 2026-07-28 "Lifecycle"): every request names its version and the
// client's capabilities in _meta, and server/discover replaces initialize.
const MCPStatelessVersion = "2026-07-28"

// MCPProtocolVersions are the MCP revisions the HTTP face speaks, newest
// first. The ones after MCPStatelessVersion are negotiated by initialize
// (MCP 2025-11-25 "Lifecycle", version negotiation).
var MCPProtocolVersions = []string{MCPStatelessVersion, "2025-11-25", "2025-06-18", "2025-03-26"}

// mcpInitializeVersions are the revisions initialize negotiates, newest first.
var mcpInitializeVersions = MCPProtocolVersions[1:]

// MCP 2026-07-28 error codes (schema: HEADER_MISMATCH,
// MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION) and the
// resource-not-found code of 2025-11-25 and older.
const (
	CodeHeaderMismatch             = -32020
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
	CodeResourceNotFoundLegacy     = -32002
)

// Standard request headers (MCP 2026-07-28 "Transports"): they repeat the
// body's method and, for tools/call, prompts/get and resources/read, the
// name or URI it acts on, so that gateways can route without parsing JSON.
const (
	headerMCPMethod = "Mcp-Method"
	headerMCPName   = "Mcp-Name"
)

// mcpLogLevels are the RFC 5424 severities MCP log messages use, least
// severe first ("Logging", Log Levels).
var mcpLogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// MCP method names the HTTP face answers itself.
const (
	methodServerDiscover = "server/discover"
	methodToolsList      = "tools/list"
	methodToolsCall      = "tools/call"
	methodResourcesList  = "resources/list"
	methodResourcesRead  = "resources/read"
	methodTemplatesList  = "resources/templates/list"
	methodPromptsList    = "prompts/list"
	methodPromptsGet     = "prompts/get"
)

// mcpRemovedMethods were removed by MCP 2026-07-28 (initialize and ping
// with the handshake, logging/setLevel by per-request log levels,
// resources/(un)subscribe by subscriptions/listen).
var mcpRemovedMethods = []string{wire.MethodInitialize, wire.MethodPing, "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// Request is what the transport headers and _meta say about one MCP
// message: whether it is MCP 2026-07-28 and then the client's declared
// capabilities (a request's own, never inferred from earlier ones).
type Request struct {
	Stateless    bool
	Capabilities map[string]json.RawMessage
	// logLevel is the least severe level the request asked to be sent
	// (_meta logLevel, MCP 2026-07-28); "" for none.
	logLevel string
	// logs are the notifications/message to send before the answer.
	logs []*wire.Message
}

// log queues a log message for the client when the request asked for its
// level or a less severe one.
func (req *Request) log(level, logger string, data any) {
	want := slices.Index(mcpLogLevels, req.logLevel)
	if want < 0 || slices.Index(mcpLogLevels, level) < want {
		return
	}
	if m, err := wire.NewNotification("notifications/message", map[string]any{"level": level, "logger": logger, "data": data}); err == nil {
		req.logs = append(req.logs, m)
	}
}

// requestOf checks a message's MCP-Protocol-Version, and for MCP
// 2026-07-28 its standard headers and _meta ("Transports", Server
// Validation; "Lifecycle", per-request metadata). Every refusal is 400:
// -32022 with data {supported, requested} for a revision this server does
// not speak, -32020 when a header is missing or differs from the body,
// -32602 when _meta lacks the protocol version or the capabilities.
func requestOf(r *http.Request, m *wire.Message) (Request, *resource.Refusal) {
	return checkRequest(r, m, ownHeaderParams)
}

// ownHeaderParams are the header arguments of this face's tool.
func ownHeaderParams(tool string) map[string]string {
	for _, tools := range [...][]Tool{ownTools, fixtureTools} {
		if i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == tool }); i >= 0 {
			return tools[i].headerParams
		}
	}
	return nil
}

// checkRequest is requestOf with the header arguments of a tool (argument
// name to the name after "Mcp-Param-") from headerParams.
func checkRequest(r *http.Request, m *wire.Message, headerParams func(tool string) map[string]string) (Request, *resource.Refusal) {
	values := r.Header.Values(headerMCPProtocolVersion)
	if len(values) == 0 && len(m.Params) == 0 {
		return Request{}, nil // MCP 2025-03-26 (see below), without _meta to check
	}
	var params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(m.Params) > 0 {
		_ = json.Unmarshal(m.Params, &params) // not an object: no _meta
	}
	metaVersion, metaVersionOK := wire.JSONString(params.Meta[wire.MetaProtocolVersion])

	switch {
	case len(values) == 0 && params.Meta[wire.MetaProtocolVersion] != nil:
		return Request{}, headerMismatch("the MCP-Protocol-Version header is missing but _meta names %s; send the header with the same version", wire.QuoteValue(metaVersion))
	case len(values) == 0:
		// MCP 2025-03-26, the revision a server assumes without the
		// header (MCP 2025-11-25 "Transports", Protocol Version Header).
		return Request{}, nil
	case len(values) > 1:
		return Request{}, headerMismatch("the request has %d MCP-Protocol-Version headers; send one", len(values))
	}
	v := strings.TrimSpace(values[0])
	if !slices.Contains(MCPProtocolVersions, v) {
		return Request{}, &resource.Refusal{Status: http.StatusBadRequest,
			Err: wire.Errorf(CodeUnsupportedProtocolVersion, "unsupported MCP-Protocol-Version %s: this server speaks %s",
				wire.QuoteValue(v), strings.Join(MCPProtocolVersions, ", ")).
				WithData(map[string]any{"supported": MCPProtocolVersions, "requested": v})}
	}
	if v != MCPStatelessVersion {
		return Request{}, nil
	}
	if ref := checkHeader(r, headerMCPMethod, m.Method); ref != nil {
		return Request{}, ref
	}
	if name, ok := NameOf(m); ok {
		if ref := checkHeader(r, headerMCPName, name); ref != nil {
			return Request{}, ref
		}
	}
	if m.Method == methodToolsCall {
		if ref := checkParamHeaders(r, m, headerParams); ref != nil {
			return Request{}, ref
		}
	}
	if !m.IsRequest() {
		return Request{Stateless: true}, nil
	}
	var caps map[string]json.RawMessage
	if !metaVersionOK || json.Unmarshal(params.Meta[wire.MetaClientCapabilities], &caps) != nil || caps == nil {
		return Request{}, &resource.Refusal{Status: http.StatusBadRequest,
			Err: wire.Errorf(wire.CodeInvalidParams, "invalid params: an MCP %s request carries params._meta with %s and %s (an empty object when the client has none)",
				MCPStatelessVersion, wire.MetaProtocolVersion, wire.MetaClientCapabilities)}
	}
	if metaVersion != v {
		return Request{}, headerMismatch("MCP-Protocol-Version is %s but _meta names %s; send the same version in both", wire.QuoteValue(v), wire.QuoteValue(metaVersion))
	}
	level, _ := wire.JSONString(params.Meta[wire.MetaLogLevel])
	if params.Meta[wire.MetaLogLevel] != nil && !slices.Contains(mcpLogLevels, level) {
		return Request{}, &resource.Refusal{Status: http.StatusBadRequest,
			Err: wire.Errorf(wire.CodeInvalidParams, "invalid params: _meta %s is not one of %s", wire.MetaLogLevel, strings.Join(mcpLogLevels, ", "))}
	}
	return Request{Stateless: true, Capabilities: caps, logLevel: level}, nil
}

// CheckRequest checks an MCP message's MCP-Protocol-Version and, for MCP
// 2026-07-28, its standard headers and _meta, as this face does (see
// requestOf), the Mcp-Param-* headers of a tools/call by headerParams
// (argument name to the name after "Mcp-Param-", from the tool's schema):
// the HTTP status and error of a refusal, or nil. serve's gateway applies
// it to what it bridges to a stdio backend itself.
func CheckRequest(r *http.Request, m *wire.Message, headerParams map[string]string) (int, *wire.Error) {
	if _, ref := checkRequest(r, m, func(string) map[string]string { return headerParams }); ref != nil {
		return ref.Status, ref.Err
	}
	return 0, nil
}

func headerMismatch(format string, args ...any) *resource.Refusal {
	return &resource.Refusal{Status: http.StatusBadRequest, Err: wire.Errorf(CodeHeaderMismatch, "header mismatch: "+format, args...)}
}

// checkHeader checks that a header is present once and, without its
// surrounding whitespace (RFC 9110 §5.5) and decoded (decodeHeaderValue),
// equals the body's value; values are case-sensitive.
func checkHeader(r *http.Request, name, want string) *resource.Refusal {
	values := r.Header.Values(name)
	switch {
	case len(values) == 0:
		return headerMismatch("the %s header is missing; send %s: %s", name, name, wire.QuoteValue(want))
	case len(values) > 1:
		return headerMismatch("the request has %d %s headers; send one", len(values), name)
	}
	got, err := decodeHeaderValue(strings.TrimSpace(values[0]))
	if err != nil {
		return headerMismatch("%s is %s, whose =?base64?…?= value is not valid Base64 (RFC 4648 §4, with padding)", name, wire.QuoteValue(values[0]))
	}
	if got != want {
		return headerMismatch("%s is %s but the body says %s; send the body's value", name, wire.QuoteValue(got), wire.QuoteValue(want))
	}
	return nil
}

// decodeHeaderValue decodes a header value sent as "=?base64?…?=" (MCP
// 2026-07-28 "Transports", Value Encoding: for values that are not plain
// printable ASCII); any other value is literal.
func decodeHeaderValue(v string) (string, error) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, nil
	}
	if inner, ok = strings.CutSuffix(inner, "?="); !ok {
		return v, nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(inner)
	return string(b), err
}

// checkParamHeaders checks the Mcp-Param-* headers of a tools/call: each
// argument whose schema property names a header (x-mcp-header) and that
// the body carries must be repeated in Mcp-Param-NAME (MCP 2026-07-28
// "Transports", Custom Headers from Tool Parameters).
func checkParamHeaders(r *http.Request, m *wire.Message, headerParams func(tool string) map[string]string) *resource.Refusal {
	var p struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return nil // tools/call refuses the params itself
	}
	for param, header := range headerParams(p.Name) {
		if v, ok := wire.JSONString(p.Arguments[param]); ok {
			if ref := checkHeader(r, "Mcp-Param-"+header, v); ref != nil {
				return ref
			}
		}
	}
	return nil
}

// NameOf is the value Mcp-Name repeats: params.name of tools/call and
// prompts/get, params.uri of resources/read.
func NameOf(m *wire.Message) (string, bool) {
	var p struct {
		Name json.RawMessage `json:"name"`
		URI  json.RawMessage `json:"uri"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return "", false
	}
	switch m.Method {
	case methodToolsCall, methodPromptsGet:
		return wire.JSONString(p.Name)
	case methodResourcesRead:
		return wire.JSONString(p.URI)
	}
	return "", false
}

// serverInfo is the server's MCP Implementation object.
func (f *Server) serverInfo() map[string]string {
	return map[string]string{"name": "agentauth", "title": "agentauth agent host", "version": f.opts.Version}
}

const mcpInstructions = "agentauth's minimal agent host. Call the whoami tool to see what your access token establishes."

// capabilities are the server capabilities: tools, and with the
// conformance fixtures resources and prompts, with no list-change
// notifications or subscriptions; for MCP 2026-07-28 (stateless) also
// logging: a request asks for log messages with _meta logLevel (no
// logging/setLevel).
func (f *Server) capabilities(stateless bool) map[string]any {
	c := map[string]any{"tools": map[string]any{}}
	if f.opts.Fixtures {
		c["resources"], c["prompts"] = map[string]any{}, map[string]any{}
	}
	if stateless {
		c["logging"] = map[string]any{}
	}
	return c
}

// mcpInitialize answers MCP initialize: the requested revision when
// supported, else the newest (MCP 2025-11-25 "Lifecycle", version negotiation).
func (f *Server) initialize(requested string) any {
	version := mcpInitializeVersions[0]
	if slices.Contains(mcpInitializeVersions, requested) {
		version = requested
	}
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    f.capabilities(false),
		"serverInfo":      f.serverInfo(),
		"instructions":    mcpInstructions,
	}
}

// mcpRequestedVersion reads an MCP initialize's protocolVersion, a date
// string; the agent host dialects send a number or protocolVersions.
func mcpRequestedVersion(params json.RawMessage) (string, bool) {
	var p struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", false
	}
	return wire.JSONString(p.ProtocolVersion)
}

// answerLegacy runs one request of MCP 2025-11-25 and older: MCP's own
// methods here, the rest (the agent host's methods, ping) through the Backend's Answer
// with the request's grant.
func (f *Server) answerLegacy(ctx context.Context, m *wire.Message, g *resource.Grant, req *Request) *wire.Message {
	switch m.Method {
	case wire.MethodInitialize:
		if v, ok := mcpRequestedVersion(m.Params); ok {
			return wire.Respond(m.ID, f.initialize(v), nil)
		}
	case methodToolsList, methodToolsCall, methodResourcesList, methodResourcesRead, methodTemplatesList, methodPromptsList, methodPromptsGet:
		result, rerr := f.mcpMethod(ctx, m, g, req)
		return wire.Respond(m.ID, result, rerr)
	}
	return f.opts.Backend.Answer(ctx, m, g)
}

// answerStateless runs one MCP 2026-07-28 request and says its HTTP
// Status: every result carries resultType and the server's identity in
// _meta; an unknown or removed method is 404 with -32601, an invalid one
// 400 ("Transports", HTTP status codes).
func (f *Server) answerStateless(ctx context.Context, m *wire.Message, g *resource.Grant, req *Request) (*wire.Message, int) {
	var result map[string]any
	var rerr *wire.Error
	switch {
	case m.Method == methodServerDiscover:
		result = map[string]any{
			"supportedVersions": MCPProtocolVersions,
			"capabilities":      f.capabilities(true),
			"instructions":      mcpInstructions,
			"ttlMs":             0,
			"cacheScope":        "public",
		}
	case slices.Contains(mcpRemovedMethods, m.Method):
		rerr = wire.Errorf(wire.CodeMethodNotFound, "method not found: MCP %s has no %s; see server/discover", MCPStatelessVersion, m.Method)
	default:
		result, rerr = f.mcpMethod(ctx, m, g, req)
	}
	if rerr != nil {
		return wire.NewErrorResponse(m.ID, rerr), statelessStatus(rerr.Code)
	}
	if _, ok := result["resultType"]; !ok {
		result["resultType"] = "complete"
	}
	result["_meta"] = map[string]any{wire.MetaServerInfo: f.serverInfo()}
	return wire.Respond(m.ID, result, nil), http.StatusOK
}

// statelessStatus is the HTTP status of an MCP 2026-07-28 error answer.
func statelessStatus(code int) int {
	switch code {
	case wire.CodeMethodNotFound:
		return http.StatusNotFound
	case wire.CodeParseError, wire.CodeInvalidRequest, wire.CodeInvalidParams,
		CodeHeaderMismatch, CodeMissingClientCapability, CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	case wire.CodeInternalError:
		return http.StatusInternalServerError
	}
	return http.StatusOK
}

// mcpMethod answers the MCP server methods both generations share.
func (f *Server) mcpMethod(ctx context.Context, m *wire.Message, g *resource.Grant, req *Request) (map[string]any, *wire.Error) {
	switch m.Method {
	case methodToolsList:
		tools := append(faceTools(req, f.opts.Fixtures), f.opts.Backend.Tools()...)
		return cacheable(map[string]any{"tools": tools}, req), nil
	case methodToolsCall:
		return callTool(ctx, f.opts.Backend, m, g, req, f.opts.Fixtures)
	case methodResourcesList:
		return cacheable(map[string]any{"resources": faceResources(f.opts.Fixtures)}, req), nil
	case methodResourcesRead:
		result, rerr := readResource(m.Params, req, f.opts.Fixtures)
		if rerr != nil {
			return nil, rerr
		}
		return cacheable(result, req), nil
	case methodTemplatesList:
		return cacheable(map[string]any{"resourceTemplates": []any{}}, req), nil
	case methodPromptsList:
		return cacheable(map[string]any{"prompts": facePrompts(f.opts.Fixtures)}, req), nil
	case methodPromptsGet:
		return getPrompt(m.Params, f.opts.Fixtures)
	}
	return nil, wire.Errorf(wire.CodeMethodNotFound, "method not found: %s", wire.QuoteValue(m.Method))
}

// cacheable adds the MCP 2026-07-28 caching hints to a list result: the
// lists are the same for every caller, so public, and may change with the
// next start of serve, so stale at once.
func cacheable(result map[string]any, req *Request) map[string]any {
	if req.Stateless {
		result["ttlMs"] = 0
		result["cacheScope"] = "public"
	}
	return result
}
