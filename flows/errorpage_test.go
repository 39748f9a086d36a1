package flows

import (
	"testing"

	"github.com/agentauth/agentauth/wire"
)

func TestRefusalPage(t *testing.T) {
	const next = " agentauth has stopped waiting: close this window, and see the terminal for what to do next."
	for _, tt := range []struct {
		oe   wire.OAuthError
		want string
	}{
		{wire.OAuthError{Code: "access_denied", Description: "the user denied the request"},
			"The sign-in was denied: you, or the authorization server, declined to let agentauth in. It said: “the user denied the request.”" + next},
		{wire.OAuthError{Code: "invalid_scope"}, "The authorization server refused the permissions (scope) agentauth asked for." + next},
		{wire.OAuthError{Code: "x_custom", Description: "Nope."}, "The authorization server refused the sign-in (x_custom). It said: “Nope.”" + next},
	} {
		if got := refusalPage(&tt.oe); got != tt.want {
			t.Errorf("refusalPage(%v) =\n%q, want\n%q", tt.oe, got, tt.want)
		}
	}
}
