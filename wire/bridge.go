package wire

import (
	"encoding/json"
	"slices"
)

// The pieces both of agentauth's bridges share: `agentauth proxy` (package
// client) and serve's gateway each let a client of MCP 2025-11-25 or
// earlier (initialize, a session) use a server that speaks MCP 2026-07-28
// only (server/discover, no session, a _meta envelope on every request,
// input_required results: "Lifecycle", "Multi Round-Trip Requests").

// CodeUnsupportedMCPVersion is MCP 2026-07-28's
// UNSUPPORTED_PROTOCOL_VERSION, with which such a server refuses a
// 2025-era initialize (HTTP 400).
const CodeUnsupportedMCPVersion = -32022

// BridgedVersions are the revisions a bridge answers a client's
// initialize with, newest first: the client's own when it is one of
// these, else the first.
var BridgedVersions = []string{MCPProtocolVersion, "2025-06-18", "2025-03-26"}

// bridgedCapabilities are the server capabilities a bridge offers an
// earlier client: those whose requests it carries as they are. Not
// offered: listChanged and resources.subscribe (2026-07-28 moves them to
// subscriptions/listen, which a bridge does not open), tasks (their
// task-augmented requests) and experimental ones (unknown to a bridge).
var bridgedCapabilities = []string{"tools", "resources", "prompts", "logging", "completions"}

// BridgedInitializeResult is the result a bridge answers a client's
// initialize with, from the server's server/discover result: the
// client's requested revision when the bridge speaks it (else the newest
// it does), the capabilities it can carry, the server's serverInfo (from
// _meta, where 2026-07-28 puts it) and instructions.
func BridgedInitializeResult(discover json.RawMessage, requested string) (json.RawMessage, error) {
	var d struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage            `json:"serverInfo"`
		Instructions string                     `json:"instructions"`
		Meta         map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(discover, &d); err != nil {
		return nil, err
	}
	version := requested
	if !slices.Contains(BridgedVersions, version) {
		version = BridgedVersions[0]
	}
	caps := map[string]map[string]json.RawMessage{}
	for _, name := range bridgedCapabilities {
		raw, ok := d.Capabilities[name]
		if !ok {
			continue
		}
		c := map[string]json.RawMessage{}
		_ = json.Unmarshal(raw, &c) // not an object: offered bare
		delete(c, "listChanged")
		delete(c, "subscribe")
		caps[name] = c
	}
	info := d.Meta[MetaServerInfo]
	if info == nil {
		info = d.ServerInfo
	}
	if info == nil {
		info = json.RawMessage(`{"name":"unknown","version":"0"}`)
	}
	result := map[string]any{"protocolVersion": version, "capabilities": caps, "serverInfo": info}
	if d.Instructions != "" {
		result["instructions"] = d.Instructions
	}
	return json.Marshal(result)
}

// DiscoverSpeaksStateless reports whether a server/discover result lists
// MCP 2026-07-28 among its supportedVersions.
func DiscoverSpeaksStateless(discover json.RawMessage) bool {
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	return json.Unmarshal(discover, &d) == nil && slices.Contains(d.SupportedVersions, MCPStatelessVersion)
}

// WithParams is a copy of request m whose params (an object, or none)
// edit changed; an error when they are not an object.
func WithParams(m *Message, edit func(params map[string]json.RawMessage)) (*Message, error) {
	params := map[string]json.RawMessage{}
	if len(m.Params) > 0 && string(m.Params) != "null" && json.Unmarshal(m.Params, &params) != nil {
		return nil, Errorf(CodeInvalidParams, "invalid params: %s needs an object", m.Method)
	}
	edit(params)
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	c := *m
	c.Params = raw
	return &c, nil
}

// RequestEnvelope is request m with the MCP 2026-07-28 request _meta
// ("Lifecycle"): the revision, the client's clientInfo and capabilities
// (as its initialize declared them; {} when none) and, when set, the log
// level ("Logging"), keeping the rest of any _meta m has.
func RequestEnvelope(m *Message, clientInfo, capabilities json.RawMessage, logLevel string) (*Message, error) {
	return WithParams(m, func(params map[string]json.RawMessage) {
		meta := map[string]json.RawMessage{}
		_ = json.Unmarshal(params["_meta"], &meta) // none, or not an object: a new one
		meta[MetaProtocolVersion] = json.RawMessage(`"` + MCPStatelessVersion + `"`)
		if len(clientInfo) > 0 {
			meta[MetaClientInfo] = clientInfo
		}
		if len(capabilities) == 0 || string(capabilities) == "null" {
			capabilities = json.RawMessage(`{}`)
		}
		meta[MetaClientCapabilities] = capabilities
		if logLevel != "" {
			meta[MetaLogLevel], _ = json.Marshal(logLevel)
		}
		params["_meta"], _ = json.Marshal(meta)
	})
}

// WithInputResponses is request m sent again with the client's answers to
// the server's input requests (inputResponses, by key) and the server's
// requestState (MCP 2026-07-28 "Multi Round-Trip Requests").
func WithInputResponses(m *Message, responses map[string]json.RawMessage, state string) (*Message, error) {
	return WithParams(m, func(params map[string]json.RawMessage) {
		params["inputResponses"], _ = json.Marshal(responses)
		delete(params, "requestState")
		if state != "" {
			params["requestState"], _ = json.Marshal(state)
		}
	})
}

// WithoutResultType is a result without the resultType of MCP 2026-07-28,
// which earlier revisions do not have; result unchanged when it is not an
// object or has none.
func WithoutResultType(result json.RawMessage) json.RawMessage {
	obj := map[string]json.RawMessage{}
	if json.Unmarshal(result, &obj) != nil || obj["resultType"] == nil {
		return result
	}
	delete(obj, "resultType")
	raw, err := json.Marshal(obj)
	if err != nil {
		return result
	}
	return raw
}
