package flows

import (
	"strings"

	"github.com/agentauth/agentauth/wire"
)

// refusalSentences put the error codes of an authorization error response
// (RFC 6749 §4.1.2.1; OpenID Connect Core 1.0 §3.1.2.6) in words for the
// page the browser shows after a refused login.
var refusalSentences = map[string]string{
	"access_denied":              "The sign-in was denied: you, or the authorization server, declined to let agentauth in.",
	"invalid_request":            "The authorization server found agentauth's sign-in request malformed or incomplete.",
	"unauthorized_client":        "The authorization server does not let this client sign in this way.",
	"unsupported_response_type":  "The authorization server does not offer sign-in with an authorization code.",
	"invalid_scope":              "The authorization server refused the permissions (scope) agentauth asked for.",
	"server_error":               "The authorization server failed while signing you in.",
	"temporarily_unavailable":    "The authorization server cannot sign you in right now; try again in a while.",
	"login_required":             "The authorization server needs you to sign in on its own page first.",
	"interaction_required":       "The authorization server needs you to act on its own page first.",
	"consent_required":           "The authorization server needs your consent on its own page first.",
	"account_selection_required": "The authorization server needs you to choose an account on its own page first.",
}

// refusalPage is the browser page's text for an authorization error
// response oe (already sanitized): a sentence for its code, the server's
// own words when it gave some, and what happens next. The raw code stays
// in the terminal's error, where it helps a report.
func refusalPage(oe *wire.OAuthError) string {
	s, ok := refusalSentences[oe.Code]
	if !ok {
		s = "The authorization server refused the sign-in (" + oe.Code + ")."
	}
	if d := strings.TrimSpace(oe.Description); d != "" {
		s += " It said: “" + strings.TrimSuffix(d, ".") + ".”"
	}
	return s + " agentauth has stopped waiting: close this window, and see the terminal for what to do next."
}
