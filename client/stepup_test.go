package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// httpRefusal builds a 401/403 with a Bearer challenge of the given params.
func httpRefusal(status int, params string) *wire.HTTPAuthError {
	h := []string{"Bearer " + params}
	c, _ := wire.BearerChallenge(h)
	return &wire.HTTPAuthError{StatusCode: status, Challenge: c, Header: h}
}

// TestAuthRetry runs the state machine against a scripted server: each
// send gets the next answer (nil is a 200), and the test records what the
// machine did in between.
func TestAuthRetry(t *testing.T) {
	var (
		noToken      = httpRefusal(401, `resource_metadata="http://127.0.0.1:1/prm", scope="mcp:basic"`)
		invalidToken = httpRefusal(401, `error="invalid_token", error_description="expired"`)
		needsWrite   = httpRefusal(403, `error="insufficient_scope", scope="mcp:basic mcp:write"`)
		needsAdmin   = httpRefusal(403, `error="insufficient_scope", scope="mcp:admin"`)
		plain403     = httpRefusal(403, `realm="x"`)
		noScope403   = httpRefusal(403, `error="insufficient_scope"`)
		boom         = errors.New("connection reset")
	)
	stored := func() *store.Credential {
		return &store.Credential{AccessToken: "stored", RefreshToken: "rt", Scopes: []string{"mcp:basic"}}
	}
	tests := []struct {
		name    string
		login   bool
		held    *store.Credential
		answers []error
		// refreshErr makes Refresh fail.
		refreshErr error
		// wantActions are the machine's actions in order.
		wantActions []string
		// wantTokens are the tokens the sends carried.
		wantTokens []string
		wantStop   StopReason
		wantErr    error
		wantText   string
	}{
		{name: "401, login, 200", login: true, answers: []error{noToken, nil},
			wantActions: []string{"authorize []"}, wantTokens: []string{"", "fresh-1"}},
		{name: "401, login, 401 again: stop instead of looping", login: true, answers: []error{noToken, invalidToken},
			wantActions: []string{"authorize []"}, wantTokens: []string{"", "fresh-1"}, wantStop: stopFreshRejected,
			wantText: "rejected the token just obtained"},
		{name: "403 insufficient_scope: step-up with the union, 200", login: true, held: stored(), answers: []error{needsWrite, nil},
			wantActions: []string{"authorize [mcp:basic mcp:write]"}, wantTokens: []string{"stored", "fresh-1"}},
		{name: "401 then 403 forever: 3 authorizations, then stop naming the scope", login: true,
			answers:     []error{noToken, needsAdmin, needsAdmin, needsAdmin, nil},
			wantActions: []string{"authorize []", "authorize [mcp:basic mcp:admin]", "authorize [mcp:basic mcp:admin]"},
			wantTokens:  []string{"", "fresh-1", "fresh-2", "fresh-3"}, wantStop: stopLimit, wantText: `missing scope "mcp:admin"`},
		{name: "403 from a stored token forever: 3 step-ups", login: true, held: stored(),
			answers:     []error{needsAdmin, needsAdmin, needsAdmin, needsAdmin, nil},
			wantActions: []string{"authorize [mcp:basic mcp:admin]", "authorize [mcp:basic mcp:admin]", "authorize [mcp:basic mcp:admin]"},
			wantTokens:  []string{"stored", "fresh-1", "fresh-2", "fresh-3"}, wantStop: stopLimit, wantText: "after 3 authorizations"},
		{name: "401 without --login: stop", answers: []error{noToken},
			wantTokens: []string{""}, wantStop: StopNoLogin, wantText: "needs authorization (HTTP 401 Unauthorized)"},
		{name: "403 without --login: stop, no refresh", held: stored(), answers: []error{needsWrite},
			wantTokens: []string{"stored"}, wantStop: StopNoLogin, wantText: `missing scope "mcp:write"`},
		{name: "stored token invalid_token: refresh, 200", held: stored(), answers: []error{invalidToken, nil},
			wantActions: []string{"refresh"}, wantTokens: []string{"stored", "refreshed"}},
		{name: "refreshed token refused too: one refresh only", held: stored(), answers: []error{invalidToken, invalidToken},
			wantActions: []string{"refresh"}, wantTokens: []string{"stored", "refreshed"}, wantStop: StopNoLogin},
		{name: "refreshed token refused, --login: log in", login: true, held: stored(), answers: []error{invalidToken, invalidToken, nil},
			wantActions: []string{"refresh", "authorize []"}, wantTokens: []string{"stored", "refreshed", "fresh-1"}},
		{name: "refresh impossible, --login: log in", login: true, held: stored(), answers: []error{invalidToken, nil},
			refreshErr:  &AuthError{Err: errors.New("refresh refused")},
			wantActions: []string{"refresh", "authorize []"}, wantTokens: []string{"stored", "fresh-1"}},
		{name: "refresh impossible without --login: its error", held: stored(), answers: []error{invalidToken},
			refreshErr:  &AuthError{Err: errors.New("refresh refused")},
			wantActions: []string{"refresh"}, wantTokens: []string{"stored"}, wantText: "refresh refused"},
		{name: "refresh fails on the network: its error, no login", login: true, held: stored(), answers: []error{invalidToken},
			refreshErr: boom, wantActions: []string{"refresh"}, wantTokens: []string{"stored"}, wantErr: boom},
		{name: "no refresh token: log in", login: true, held: &store.Credential{AccessToken: "stored"}, answers: []error{invalidToken, nil},
			wantActions: []string{"authorize []"}, wantTokens: []string{"stored", "fresh-1"}},
		{name: "403 that asks for no scope: stop", login: true, held: stored(), answers: []error{plain403},
			wantTokens: []string{"stored"}, wantStop: stopForbidden},
		{name: "403 insufficient_scope without scope: stop", login: true, held: stored(), answers: []error{noScope403},
			wantTokens: []string{"stored"}, wantStop: stopForbidden, wantText: "names no scope"},
		{name: "other errors pass through", login: true, answers: []error{boom},
			wantTokens: []string{""}, wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var actions, tokens []string
			a := &authRetry{Login: tt.login, Held: tt.held}
			a.Refresh = func(_ context.Context, stale *store.Credential) (*store.Credential, error) {
				actions = append(actions, "refresh")
				if stale != a.Held {
					t.Errorf("Refresh got %q, not the held credential", stale.AccessToken)
				}
				if tt.refreshErr != nil {
					return nil, tt.refreshErr
				}
				return &store.Credential{AccessToken: "refreshed", RefreshToken: "rt2", Scopes: stale.Scopes}, nil
			}
			a.Authorize = func(_ context.Context, _ *wire.HTTPAuthError, scopes []string) (*store.Credential, error) {
				actions = append(actions, fmt.Sprintf("authorize %v", scopes))
				granted := scopes
				if granted == nil {
					granted = []string{"mcp:basic"}
				}
				return &store.Credential{AccessToken: fmt.Sprintf("fresh-%d", countPrefix(actions, "authorize")), Scopes: granted, RefreshToken: "rt"}, nil
			}
			answers := tt.answers
			err := a.do(context.Background(), func(context.Context) error {
				tok := ""
				if a.Held != nil {
					tok = a.Held.AccessToken
				}
				tokens = append(tokens, tok)
				if len(answers) == 0 {
					t.Fatal("sent once more than the script allows")
				}
				next := answers[0]
				answers = answers[1:]
				return next
			})
			if diff := cmp.Diff(tt.wantActions, actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTokens, tokens); diff != "" {
				t.Errorf("tokens sent (-want +got):\n%s", diff)
			}
			var refused *RefusedError
			switch {
			case tt.wantStop != 0:
				if !errors.As(err, &refused) || refused.Reason != tt.wantStop {
					t.Fatalf("err = %v, want a stop (reason %d)", err, tt.wantStop)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			case tt.wantText == "" && err != nil:
				t.Fatalf("err = %v, want success", err)
			}
			if tt.wantText != "" && (err == nil || !strings.Contains(err.Error(), tt.wantText)) {
				t.Errorf("err = %v, want it to say %q", err, tt.wantText)
			}
		})
	}
}

func countPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// A stop wraps the server's refusal, and names what is missing.
func TestRefusedErrorMessages(t *testing.T) {
	e := &RefusedError{Reason: stopLimit, Refusal: httpRefusal(403, `error="insufficient_scope", scope="a b c"`), Held: []string{"a"}}
	if got := e.Error(); !strings.Contains(got, `missing scope "b c"`) || !strings.Contains(got, "HTTP 403 Forbidden insufficient_scope") {
		t.Errorf("Error() = %q", got)
	}
	var auth *wire.HTTPAuthError
	if !errors.As(e, &auth) || auth.StatusCode != 403 {
		t.Error("the refusal is not reachable with errors.As")
	}
	// Every scope held yet refused: all of them are named.
	e.Held = []string{"a", "b", "c"}
	if got := e.Error(); !strings.Contains(got, `missing scope "a b c"`) {
		t.Errorf("Error() = %q", got)
	}
}

// TestAuthRetryAcceptedThenRefused: a token this command obtained that the
// server accepted once and then refuses (the protected resource moved to
// another authorization server, MCP 2026-07-28) is replaced by one more
// login, not reported as "rejected the token just obtained".
func TestAuthRetryAcceptedThenRefused(t *testing.T) {
	noToken := httpRefusal(401, `resource_metadata="http://127.0.0.1:1/prm"`)
	moved := httpRefusal(401, `error="invalid_token", error_description="authorization server has changed"`)
	logins := 0
	a := &authRetry{Login: true}
	a.Authorize = func(context.Context, *wire.HTTPAuthError, []string) (*store.Credential, error) {
		logins++
		return &store.Credential{AccessToken: fmt.Sprintf("fresh-%d", logins)}, nil
	}
	script := func(answers ...error) func(context.Context) error {
		return func(context.Context) error {
			next := answers[0]
			answers = answers[1:]
			return next
		}
	}
	if err := a.do(context.Background(), script(noToken, nil)); err != nil { // server/discover
		t.Fatal(err)
	}
	if err := a.do(context.Background(), script(moved, nil)); err != nil { // tools/list
		t.Fatalf("second step: %v, want a second login", err)
	}
	if logins != 2 || a.Held.AccessToken != "fresh-2" {
		t.Errorf("%d logins, holding %q; want 2, fresh-2", logins, a.Held.AccessToken)
	}
}
