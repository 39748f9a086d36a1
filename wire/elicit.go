package wire

import (
	"encoding/json"
	"time"
)

// The upstream sign-in ("the ask", issue 15): a server that must call a
// third-party API as the user sends the user to a URL of its own, where
// it runs the OAuth flow with that API itself. These are the shapes each
// protocol gives the ask; the upstream's tokens never reach the client.

// CodeURLElicitationRequired is MCP 2025-11-25's URLElicitationRequiredError
// ("Elicitation", URL Elicitation Required Error).
const CodeURLElicitationRequired = -32042

// MethodElicitationCreate is the request (or MCP 2026-07-28 input
// request) that asks the client to elicit from the user.
const MethodElicitationCreate = "elicitation/create"

// _meta keys agentauth's serve adds to a URL elicitation.
const (
	MetaUpstream   = "io.agentauth/upstream"
	MetaAuthStatus = "io.agentauth/authStatus"
)

// ResultTypeInputRequired marks an MCP 2026-07-28 InputRequiredResult
// ("Multi Round-Trip Requests").
const ResultTypeInputRequired = "input_required"

// URLElicitationCapabilities are the client capabilities that let a
// server send URL-mode elicitations (MCP 2025-11-25 and 2026-07-28
// "Elicitation", Capabilities).
var URLElicitationCapabilities = json.RawMessage(`{"elicitation":{"url":{}}}`)

// Upstream names the third-party service an ask is for; Host is its
// authorization endpoint's host, where the user will type a password.
type Upstream struct {
	ID    string `json:"id"`
	Label string `json:"label,omitempty"`
	Host  string `json:"host,omitempty"`
}

// SignInAsk is an upstream sign-in a server needs before it can answer,
// whatever protocol carried it.
type SignInAsk struct {
	// URL is the page to open in the user's browser.
	URL           string   `json:"url"`
	ElicitationID string   `json:"elicitationId,omitempty"`
	Message       string   `json:"message,omitempty"`
	Upstream      Upstream `json:"upstream"`
	// AuthStatus is the URL that answers whether the sign-in completed
	// (with the caller's bearer token), "" when the server named none.
	AuthStatus string `json:"authStatus,omitempty"`
}

// URLElicitation is a URL-mode elicitation: an entry of -32042's
// data.elicitations, or the params of an elicitation/create request.
type URLElicitation struct {
	Mode          string                     `json:"mode"`
	ElicitationID string                     `json:"elicitationId,omitempty"`
	URL           string                     `json:"url"`
	Message       string                     `json:"message"`
	Meta          map[string]json.RawMessage `json:"_meta,omitempty"`
}

// Ask is the elicitation as a SignInAsk; the upstream and status URL come
// from serve's _meta keys when present.
func (e URLElicitation) Ask() SignInAsk {
	a := SignInAsk{URL: e.URL, ElicitationID: e.ElicitationID, Message: e.Message}
	_ = json.Unmarshal(e.Meta[MetaUpstream], &a.Upstream)     // optional
	_ = json.Unmarshal(e.Meta[MetaAuthStatus], &a.AuthStatus) // optional
	return a
}

// URLElicitationsRequired reads a -32042 error's URL-mode elicitations;
// ok is false for any other error or one that carries none.
func URLElicitationsRequired(e *Error) (asks []SignInAsk, ok bool) {
	if e == nil || e.Code != CodeURLElicitationRequired {
		return nil, false
	}
	var d struct {
		Elicitations []URLElicitation `json:"elicitations"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return nil, false
	}
	for _, el := range d.Elicitations {
		if el.Mode == "url" && el.URL != "" {
			asks = append(asks, el.Ask())
		}
	}
	return asks, len(asks) > 0
}

// InputRequest is one entry of an InputRequiredResult's inputRequests.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// InputRequiredResult is MCP 2026-07-28's "more input needed" result of
// tools/call, prompts/get and resources/read: the client answers each
// input request under its key in inputResponses and echoes requestState
// when it retries ("Multi Round-Trip Requests", Core Types).
type InputRequiredResult struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState,omitempty"`
}

// ParseInputRequired reads raw as an InputRequiredResult; ok is false for
// any other result.
func ParseInputRequired(raw json.RawMessage) (res InputRequiredResult, ok bool) {
	if json.Unmarshal(raw, &res) != nil || res.ResultType != ResultTypeInputRequired {
		return InputRequiredResult{}, false
	}
	return res, true
}

// HostSignInAsk reads the upstream fields serve adds to an agent host's
// -32007 or an ACP agent's -32000 (issue 15 contract): "url",
// "elicitationId", "upstream" and "authStatus". ok is false when the error
// is another refusal.
func HostSignInAsk(e *Error) (ask SignInAsk, methods []string, ok bool) {
	if e == nil || (e.Code != CodeAuthRequired && e.Code != CodeACPAuthRequired) || len(e.Data) == 0 {
		return SignInAsk{}, nil, false
	}
	var d struct {
		SignInAsk
		AuthMethods []string `json:"authMethods"`
	}
	if json.Unmarshal(e.Data, &d) != nil || d.URL == "" || d.Upstream.ID == "" {
		return SignInAsk{}, nil, false
	}
	return d.SignInAsk, d.AuthMethods, true
}

// ErrAuthenticationRequired is the "error" of a plain HTTP tool's 401 body
// when the caller's token is fine but an upstream sign-in is missing.
const ErrAuthenticationRequired = "authentication_required"

// AuthenticationRequiredBody is that 401's JSON body (seed 004's agent).
type AuthenticationRequiredBody struct {
	Error         string   `json:"error"`
	AuthURL       string   `json:"auth_url"`
	ElicitationID string   `json:"elicitation_id,omitempty"`
	Upstream      Upstream `json:"upstream"`
	Session       string   `json:"session,omitempty"`
	AuthStatus    string   `json:"auth_status,omitempty"`
	Instructions  []string `json:"instructions,omitempty"`
}

// Ask is the body as a SignInAsk.
func (b AuthenticationRequiredBody) Ask() SignInAsk {
	return SignInAsk{URL: b.AuthURL, ElicitationID: b.ElicitationID, Upstream: b.Upstream, AuthStatus: b.AuthStatus}
}

// AuthStatus is the answer of serve's /auth-status: about one upstream
// (Upstream set), or every upstream (Upstreams).
type AuthStatus struct {
	Session       string           `json:"session,omitempty"`
	Authenticated bool             `json:"authenticated"`
	Upstream      string           `json:"upstream,omitempty"`
	ExpiresAt     *time.Time       `json:"expiresAt,omitempty"`
	Upstreams     []UpstreamStatus `json:"upstreams,omitempty"`
	// Error says why the last sign-in failed (the upstream refused it),
	// when it did.
	Error string `json:"error,omitempty"`
}

// UpstreamStatus is one upstream's sign-in in an AuthStatus.
type UpstreamStatus struct {
	Upstream      string     `json:"upstream"`
	Label         string     `json:"label,omitempty"`
	Host          string     `json:"host,omitempty"`
	Authenticated bool       `json:"authenticated"`
	ExpiresAt     *time.Time `json:"expiresAt,omitempty"`
}
