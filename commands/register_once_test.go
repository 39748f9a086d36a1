package commands

import (
	"sync"
	"testing"

	"github.com/agentauth/agentauth/store"
)

// TestConcurrentLoginsRegisterOnce: 20 logins to one issuer at once, each
// with its own handle on one file store (as 20 processes would be), make
// one dynamic registration, and every login uses it.
func TestConcurrentLoginsRegisterOnce(t *testing.T) {
	as := newOAuthFake(t)
	dir := t.TempDir()
	var tfs []*testFactory
	for range 20 {
		tf := newTestFactory(t, "")
		st, err := store.Open(store.KindFile, dir)
		if err != nil {
			t.Fatal(err)
		}
		tf.st = st
		tfs = append(tfs, tf)
	}
	var wg sync.WaitGroup
	codes := make([]int, len(tfs))
	for i, tf := range tfs {
		wg.Go(func() { codes[i] = tf.run("login", as.resource()) })
	}
	wg.Wait()
	for i, code := range codes {
		if code != 0 {
			t.Errorf("login %d: exit %d; stderr:\n%s", i, code, tfs[i].errOut)
		}
	}
	if as.registered != 1 {
		t.Errorf("%d registrations, want 1", as.registered)
	}
}

// TestRegistrationOutlivesFailedLogin: a login the user denies, and one
// that fails at the token endpoint, leave their registration for the next
// login, which registers nothing.
func TestRegistrationOutlivesFailedLogin(t *testing.T) {
	as := newOAuthFake(t)
	tf := newTestFactory(t, "")
	as.authError = "access_denied"
	if code := tf.run("login", as.resource()); code != ExitAuth {
		t.Fatalf("denied login: exit %d, want %d; stderr:\n%s", code, ExitAuth, tf.errOut)
	}
	as.authError = ""
	if code := tf.run("login", as.resource()); code != 0 {
		t.Fatalf("second login: exit %d; stderr:\n%s", code, tf.errOut)
	}
	if as.registered != 1 {
		t.Errorf("%d registrations, want 1", as.registered)
	}
	if c := storedOne(t, tf); c.Client.ClientID != "dcr-1" {
		t.Errorf("client %q, want dcr-1", c.Client.ClientID)
	}
}
