package issuer_test

import (
	"testing"

	"github.com/agentauth/agentauth/issuer"
	"github.com/google/go-cmp/cmp"
)

// TestSessionEndOnReuseAndReplay: a family revoked because its rotated
// refresh token was reused, or its code replayed, ends the session
// (OnSessionEnd) when it was the client's last live family for the
// subject: not while another lives, and not again for a second replay.
func TestSessionEndOnReuseAndReplay(t *testing.T) {
	s := start(t, issuer.Options{AutoApprove: true, Clients: []issuer.Client{rs}})
	var ended []string
	s.iss.OnSessionEnd(func(subject, clientID string) { ended = append(ended, subject+"/"+clientID) })
	want := []string{"alice/" + issuer.CLIClientID}

	// Refresh token reuse: first while another family lives, then on the
	// last one.
	one, two := s.tokens(nil), s.tokens(nil)
	wantOK(t, s.refresh(issuer.CLIClientID, one["refresh_token"].(string)))
	wantError(t, s.refresh(issuer.CLIClientID, one["refresh_token"].(string)), 400, "invalid_grant")
	if len(ended) != 0 {
		t.Fatalf("session ended with a family still live: %v", ended)
	}
	wantOK(t, s.refresh(issuer.CLIClientID, two["refresh_token"].(string)))
	wantError(t, s.refresh(issuer.CLIClientID, two["refresh_token"].(string)), 400, "invalid_grant")
	if !cmp.Equal(ended, want) {
		t.Fatalf("after the reuse of the last family: OnSessionEnd got %v, want %v", ended, want)
	}

	// Code replay of the only live family; a second replay ends nothing more.
	ended = nil
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	code := s.code(a)
	wantOK(t, s.exchange(a, code))
	wantError(t, s.exchange(a, code), 400, "invalid_grant")
	wantError(t, s.exchange(a, code), 400, "invalid_grant")
	if !cmp.Equal(ended, want) {
		t.Errorf("after a code replay: OnSessionEnd got %v, want %v", ended, want)
	}
}
