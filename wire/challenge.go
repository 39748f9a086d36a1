package wire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RFC 6750 §3.1 error codes.
const (
	ErrInvalidRequest    = "invalid_request"
	ErrInvalidToken      = "invalid_token"
	ErrInsufficientScope = "insufficient_scope"
)

// Challenge is one scheme's reason for refusing a call (PROTOCOL.md -32007).
type Challenge struct {
	SchemeID         string `json:"schemeId"`
	Resource         string `json:"resource"`
	Error            string `json:"error"`
	ErrorDescription string `json:"errorDescription,omitempty"`
	Scope            string `json:"scope,omitempty"`
}

// AuthRequiredData is the data of a -32007 error.
type AuthRequiredData struct {
	Challenges []Challenge                 `json:"challenges"`
	Resources  []ProtectedResourceMetadata `json:"resources,omitempty"`
}

// NewAuthRequiredError builds the -32007 error for the given challenges.
func NewAuthRequiredError(data AuthRequiredData) *Error {
	return (&Error{Code: CodeAuthRequired, Message: "Authentication required"}).WithData(data)
}

// AuthRequired decodes the data of a -32007 error; ok is false for any other error.
// The data may also be a bare array of protected resources, as VS Code's
// Copilot agent sends it (src/vs/platform/agentHost/node/copilot/copilotAgent.ts,
// _ensureClient), or absent, as VS Code's host answers a refused authenticate.
func (e *Error) AuthRequired() (AuthRequiredData, bool) {
	if e == nil || e.Code != CodeAuthRequired {
		return AuthRequiredData{}, false // no allocation on the hot path
	}
	var d AuthRequiredData
	if len(e.Data) > 0 && json.Unmarshal(e.Data, &d) != nil {
		_ = json.Unmarshal(e.Data, &d.Resources)
	}
	return d, true
}

// String renders a challenge for people: "dev: invalid_token — The access token expired (needs scope agent:admin)".
func (c Challenge) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", c.SchemeID, c.Error)
	if c.ErrorDescription != "" {
		fmt.Fprintf(&b, " — %s", c.ErrorDescription)
	}
	if c.Scope != "" {
		fmt.Fprintf(&b, " (needs scope %s)", c.Scope)
	}
	return b.String()
}
