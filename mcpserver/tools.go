package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// Tool is a tools/list entry (MCP 2025-11-25 "Tools").
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations map[string]bool `json:"annotations,omitempty"`
	// statelessOnly tools ask the client for input within the request
	// (MCP 2026-07-28 input requests), which older revisions cannot.
	statelessOnly bool
	// headerParams maps the arguments that MCP 2026-07-28 clients repeat
	// in a header to its name after "Mcp-Param-" (the x-mcp-header of
	// their schema property).
	headerParams map[string]string
}

// Tool names. The test_* ones are the fixtures the official conformance
// suite's server scenarios call, with the behaviour they expect.
const (
	ToolWhoami      = "whoami"
	toolEcho        = "echo"
	toolSimpleText  = "test_simple_text"
	toolError       = "test_error_handling"
	ToolSampling    = "test_missing_capability"
	toolElicitation = "test_streaming_elicitation"
	toolLogging     = "test_logging_tool"
)

const noArguments = `{"type":"object","properties":{},"additionalProperties":false}`

var readOnly = map[string]bool{"readOnlyHint": true, "openWorldHint": false}

// ownTools are the face's own tools.
var ownTools = []Tool{
	{Name: ToolWhoami, Title: "Who am I",
		Description: "Reports what the request's access token establishes, per scheme: subject, client id, scopes and expiry (never the token).",
		InputSchema: json.RawMessage(noArguments), Annotations: readOnly},
	{Name: toolEcho, Title: "Echo",
		Description: "Returns its text argument unchanged (gated like the agent host's echo method).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the text to return","x-mcp-header":"Text"}},"required":["text"],"additionalProperties":false}`),
		Annotations: readOnly, headerParams: map[string]string{"text": "Text"}},
}

// fixtureTools are the conformance suite's tools (Options.Fixtures).
var fixtureTools = []Tool{
	{Name: toolSimpleText, Title: "Simple text",
		Description: "Returns one fixed line of text.",
		InputSchema: json.RawMessage(noArguments), Annotations: readOnly},
	{Name: toolError, Title: "Failing tool",
		Description: "Always fails with a tool error (isError: true), to show how a client reports one.",
		InputSchema: json.RawMessage(noArguments), Annotations: readOnly},
	{Name: ToolSampling, Title: "Ask the client's model",
		Description: "Asks the client's model to say hello, through an input request: needs the sampling capability (MCP 2026-07-28).",
		InputSchema: json.RawMessage(noArguments), Annotations: readOnly, statelessOnly: true},
	{Name: toolElicitation, Title: "Ask the user",
		Description: "Asks the user for a name, through an input request: needs the elicitation capability (MCP 2026-07-28).",
		InputSchema: json.RawMessage(noArguments), Annotations: readOnly, statelessOnly: true},
	{Name: toolLogging, Title: "Log three lines",
		Description: "Logs three info messages, sent to the client before the result when the request's _meta sets io.modelcontextprotocol/logLevel (MCP 2026-07-28).",
		InputSchema: json.RawMessage(noArguments), Annotations: readOnly, statelessOnly: true},
}

// faceTools are the face's tools a request may call: ownTools, and
// fixtureTools when fixtures; those that ask the client for input within
// the request only for MCP 2026-07-28 requests.
func faceTools(req *Request, fixtures bool) []Tool {
	tools := slices.Clone(ownTools)
	if fixtures {
		tools = append(tools, fixtureTools...)
	}
	return slices.DeleteFunc(tools, func(t Tool) bool { return t.statelessOnly && !req.Stateless })
}

// Input request keys of the tools that ask the client (MCP 2026-07-28
// "Multi Round-Trip"): the client answers each under the same key.
const (
	inputHello = "hello"
	inputName  = "name"
)

// CallTool runs the tools/call request m for the grant g as a request of
// MCP 2025-11-25 or older would (the plain HTTP face POST /tools/{name}
// of host.Host.BrokerHandler calls it).
func CallTool(ctx context.Context, b Backend, m *wire.Message, g *resource.Grant) (map[string]any, *wire.Error) {
	return callTool(ctx, b, m, g, &Request{}, false)
}

// callTool runs tools/call. whoami and echo go through the backend's
// gate (Answer), so a missing scope is the same 403 as calling the
// method directly; the backend's own tools are its to run.
func callTool(ctx context.Context, b Backend, m *wire.Message, g *resource.Grant, req *Request, fixtures bool) (map[string]any, *wire.Error) {
	var p struct {
		Name           string                     `json:"name"`
		Arguments      map[string]json.RawMessage `json:"arguments"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, `invalid params: tools/call needs {"name": "…", "arguments": {…}}`)
	}
	if slices.ContainsFunc(b.Tools(), func(t Tool) bool { return t.Name == p.Name }) {
		return b.CallTool(ctx, g, p.Name, p.Arguments, p.InputResponses, *req)
	}
	callable := func(t Tool) bool { return t.Name == p.Name && (req.Stateless || !t.statelessOnly) }
	if !slices.ContainsFunc(ownTools, callable) && !(fixtures && slices.ContainsFunc(fixtureTools, callable)) {
		var names []string
		for _, t := range append(faceTools(req, fixtures), b.Tools()...) {
			names = append(names, t.Name)
		}
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: unknown tool %s (this server has: %s)", wire.QuoteValue(p.Name), strings.Join(names, ", "))
	}
	if p.Name != toolEcho && len(p.Arguments) > 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: %s takes no arguments", p.Name)
	}
	switch p.Name {
	case ToolWhoami:
		resp := b.Answer(ctx, &wire.Message{JSONRPC: wire.Version, ID: m.ID, Method: wire.MethodWhoami}, g)
		if resp.Error != nil {
			return nil, resp.Error
		}
		return ToolText(string(resp.Result), false), nil
	case toolEcho:
		text, ok := wire.JSONString(p.Arguments["text"])
		if !ok || len(p.Arguments) != 1 {
			return nil, wire.Errorf(wire.CodeInvalidParams, `invalid params: echo takes {"text": "…"} and nothing else`)
		}
		params, _ := json.Marshal(map[string]string{"text": text})
		resp := b.Answer(ctx, &wire.Message{JSONRPC: wire.Version, ID: m.ID, Method: wire.MethodEcho, Params: params}, g)
		if resp.Error != nil {
			return nil, resp.Error
		}
		return ToolText(text, false), nil
	case toolSimpleText:
		return ToolText("This is a simple text response for testing.", false), nil
	case toolLogging:
		for i := 1; i <= 3; i++ {
			req.log("info", toolLogging, fmt.Sprintf("log line %d of 3", i))
		}
		return ToolText("Logged three info lines.", false), nil
	case toolError:
		return ToolText("This tool always fails: the failure is reported in the result (isError), not as a protocol error.", true), nil
	case ToolSampling:
		return askClient(req, "sampling", p.InputResponses, inputHello, map[string]any{
			"method": "sampling/createMessage",
			"params": map[string]any{
				"messages":  []map[string]any{{"role": "user", "content": map[string]string{"type": "text", "text": "Say hello in five words or fewer."}}},
				"maxTokens": 50,
			},
		}, func(raw json.RawMessage) (string, bool) {
			var r struct {
				Content struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			}
			if json.Unmarshal(raw, &r) != nil || r.Content.Type != "text" {
				return "", false
			}
			return "The client's model says: " + r.Content.Text, true
		})
	default: // toolElicitation
		return askClient(req, "elicitation", p.InputResponses, inputName, map[string]any{
			"method": "elicitation/create",
			"params": map[string]any{
				"mode":    "form",
				"message": "What is your name?",
				"requestedSchema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"name": map[string]string{"type": "string", "description": "your name"}},
					"required":   []string{"name"},
				},
			},
		}, func(raw json.RawMessage) (string, bool) {
			var r struct {
				Action  string `json:"action"`
				Content struct {
					Name string `json:"name"`
				} `json:"content"`
			}
			if json.Unmarshal(raw, &r) != nil {
				return "", false
			}
			if r.Action != "accept" {
				return fmt.Sprintf("No name given (the user chose %s).", wire.QuoteValue(r.Action)), true
			}
			return fmt.Sprintf("Hello, %s.", r.Content.Name), true
		})
	}
}

// askClient runs a tool that needs one answer from the client (MCP
// 2026-07-28 "Multi Round-Trip"): without the capability the request
// declares, -32021 naming it; without the answer, an input_required
// result asking for it under key; with it, the tool's text.
func askClient(req *Request, capability string, responses map[string]json.RawMessage, key string, ask map[string]any, answer func(json.RawMessage) (string, bool)) (map[string]any, *wire.Error) {
	if _, ok := req.Capabilities[capability]; !ok {
		return nil, wire.Errorf(CodeMissingClientCapability, "missing required client capability: this tool needs %s; declare it in _meta %s", capability, wire.MetaClientCapabilities).
			WithData(map[string]any{"requiredCapabilities": map[string]any{capability: map[string]any{}}})
	}
	raw, ok := responses[key]
	if !ok {
		return map[string]any{"resultType": "input_required", "inputRequests": map[string]any{key: ask}}, nil
	}
	text, ok := answer(raw)
	if !ok {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: inputResponses[%s] is not a %s result", wire.QuoteValue(key), ask["method"])
	}
	return ToolText(text, false), nil
}

// ToolText is a tools/call result of one text content block.
func ToolText(text string, isError bool) map[string]any {
	return map[string]any{"content": []map[string]string{{"type": "text", "text": text}}, "isError": isError}
}

// mcpResource is a resources/list entry (MCP 2025-11-25 "Resources").
type mcpResource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	MIMEType    string `json:"mimeType"`
	text        string
}

var staticTextResource = mcpResource{URI: "test://static-text", Name: "static-text", Title: "Static text",
	Description: "A fixed text resource.", MIMEType: "text/plain", text: "This is the content of the static text resource."}

// faceResources are the face's resources: the conformance suite's one
// when fixtures, else none.
func faceResources(fixtures bool) []mcpResource {
	if fixtures {
		return []mcpResource{staticTextResource}
	}
	return []mcpResource{}
}

// readResource answers resources/read; an unknown URI is -32602 in MCP
// 2026-07-28 and -32002 before ("Resources", Error Handling).
func readResource(params json.RawMessage, req *Request, fixtures bool) (map[string]any, *wire.Error) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || p.URI == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, `invalid params: resources/read needs {"uri": "…"}`)
	}
	if !fixtures || p.URI != staticTextResource.URI {
		code := wire.CodeInvalidParams
		if !req.Stateless {
			code = CodeResourceNotFoundLegacy
		}
		has := "this server has none"
		if fixtures {
			has = "this server has: " + staticTextResource.URI
		}
		return nil, wire.Errorf(code, "resource not found: %s (%s)", wire.QuoteValue(p.URI), has).
			WithData(map[string]string{"uri": p.URI})
	}
	r := staticTextResource
	return map[string]any{"contents": []map[string]string{{"uri": r.URI, "mimeType": r.MIMEType, "text": r.text}}}, nil
}

// mcpPrompt is a prompts/list entry (MCP 2025-11-25 "Prompts").
type mcpPrompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title"`
	Description string           `json:"description"`
	Arguments   []mcpPromptParam `json:"arguments,omitempty"`
}

type mcpPromptParam struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

const (
	promptSimple = "test_simple_prompt"
	promptArgs   = "test_prompt_with_arguments"
)

var mcpPrompts = []mcpPrompt{
	{Name: promptSimple, Title: "Simple prompt", Description: "A fixed user message."},
	{Name: promptArgs, Title: "Prompt with arguments", Description: "A user message that quotes its two arguments.",
		Arguments: []mcpPromptParam{{Name: "arg1", Description: "first argument", Required: true}, {Name: "arg2", Description: "second argument", Required: true}}},
}

// facePrompts are the face's prompts: the conformance suite's when
// fixtures, else none.
func facePrompts(fixtures bool) []mcpPrompt {
	if fixtures {
		return mcpPrompts
	}
	return []mcpPrompt{}
}

// getPrompt answers prompts/get.
func getPrompt(params json.RawMessage, fixtures bool) (map[string]any, *wire.Error) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, `invalid params: prompts/get needs {"name": "…", "arguments": {"…": "…"}}`)
	}
	if !fixtures {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: unknown prompt %s (this server has none)", wire.QuoteValue(p.Name))
	}
	var text string
	switch p.Name {
	case promptSimple:
		text = "This is a simple prompt for testing."
	case promptArgs:
		a1, ok1 := p.Arguments["arg1"]
		a2, ok2 := p.Arguments["arg2"]
		if !ok1 || !ok2 {
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: %s needs the arguments arg1 and arg2", promptArgs)
		}
		text = fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a1, a2)
	default:
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: unknown prompt %s (this server has: %s, %s)", wire.QuoteValue(p.Name), promptSimple, promptArgs)
	}
	return map[string]any{
		"description": mcpPrompts[slices.IndexFunc(mcpPrompts, func(q mcpPrompt) bool { return q.Name == p.Name })].Description,
		"messages":    []map[string]any{{"role": "user", "content": map[string]string{"type": "text", "text": text}}},
	}, nil
}
