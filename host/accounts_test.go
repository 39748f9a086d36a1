package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/tokenfake"
)

const (
	init110 = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.1.0"],"clientId":"c"}}`
	begin   = `{"jsonrpc":"2.0","id":%d,"method":"authBegin","params":{"channel":"ahp-accounts://","target":{"consumer":{"kind":"agent","provider":"agentauth","resource":"https://api.github.com"}},"flows":[{"kind":"clientBrokered"}]}}`
	bound   = `{"jsonrpc":"2.0","id":%d,"method":"authenticate","params":{"channel":"ahp-root://","resource":"https://api.github.com","token":"%s","binding":{"kind":"%s","%sId":"%s"}}}`
)

// read is the next frame of f's connection.
func (f frames) read() map[string]any {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pushWait)
	defer cancel()
	b, err := readFrame(ctx, f.conn)
	if err != nil {
		f.t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// TestAccountsBounded: a peer calling authBegin without end keeps at most
// maxPendingAttempts pending (the oldest fail, and a failed attempt's
// delivery is Conflict) and the table at most maxAttempts attempts.
func TestAccountsBounded(t *testing.T) {
	h := newTestHost(t, ahpTwoUsersConfig, Options{})
	f := frames{t, pipeConn(t, h, 0)}
	f.exchange(init110, `{"id":1,"result":{"authentication":{"flows":[{"kind":"clientBrokered"}]}}}`)
	for i := 1; i <= 3*maxAttempts; i++ {
		f.exchange(fmt.Sprintf(begin, 100+i), fmt.Sprintf(`{"id":%d,"result":{"flow":"clientBrokered","attemptId":"attempt-%d"}}`, 100+i, i))
	}
	f.exchange(`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"ahp-accounts://"}}`, "")
	m := f.read()
	attempts := m["result"].(map[string]any)["snapshot"].(map[string]any)["state"].(map[string]any)["attempts"].([]any)
	pending := 0
	for _, a := range attempts {
		if a.(map[string]any)["status"] == "pending" {
			pending++
		}
	}
	if len(attempts) > maxAttempts || pending != maxPendingAttempts {
		t.Errorf("%d attempts kept, %d pending; want at most %d, %d pending", len(attempts), pending, maxAttempts, maxPendingAttempts)
	}
	f.exchange(fmt.Sprintf(bound, 3, "gho_octocat", "attempt", "attempt", "attempt-1"), `{"id":3,"error":{"code":-32011}}`)
	f.exchange(fmt.Sprintf(bound, 4, "gho_octocat", "attempt", "attempt", fmt.Sprintf("attempt-%d", 3*maxAttempts)), "")
	for m := f.read(); m["id"] == nil; m = f.read() { // the actions
	}
}

// TestAccountsNotOn090: a 0.9.0 connection's initialize has no
// authentication capability.
func TestAccountsNotOn090(t *testing.T) {
	h := newTestHost(t, ahpTwoUsersConfig, Options{})
	f := frames{t, pipeConn(t, h, 0)}
	f.exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.9.0"],"clientId":"c"}}`, "")
	if m := f.read(); strings.Contains(fmt.Sprint(m["result"]), "authentication") {
		t.Errorf("0.9.0 initialize names authentication: %v", m)
	}
}

// TestAccountsSwitchAndSharedTable: with grants shared by the host's
// connections, one connection's admission of another identity for the
// consumer retires the first account (renewing it is Conflict); another
// connection cannot complete its attempt (PermissionDenied) nor, even on
// 0.9.0, overwrite the account's credential unbound (InvalidParams).
func TestAccountsSwitchAndSharedTable(t *testing.T) {
	h := newTestHost(t, ahpTwoUsersConfig, Options{AuthScope: AuthScopeHost})
	a := frames{t, pipeConn(t, h, 0)}
	a.exchange(init110, `{"id":1}`)
	a.exchange(fmt.Sprintf(begin, 2), `{"id":2,"result":{"attemptId":"attempt-1"}}`)
	a.exchange(fmt.Sprintf(bound, 3, "gho_octocat", "attempt", "attempt", "attempt-1"), `{"id":3,"result":{"accountId":"account-1"}}`)
	a.exchange(fmt.Sprintf(begin, 4), `{"id":4,"result":{"attemptId":"attempt-2"}}`)

	b := frames{t, pipeConn(t, h, 0)}
	b.exchange(init110, `{"id":1}`)
	b.exchange(fmt.Sprintf(bound, 2, "gho_hubot", "attempt", "attempt", "attempt-2"), `{"id":2,"error":{"code":-32009}}`)
	old := frames{t, pipeConn(t, h, 0)}
	old.exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.9.0"],"clientId":"o"}}`, `{"id":1}`)
	old.exchange(`{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"channel":"ahp-root://","resource":"https://api.github.com","token":"gho_hubot"}}`,
		`{"id":2,"error":{"code":-32602}}`)

	a.exchange(fmt.Sprintf(bound, 5, "gho_hubot", "attempt", "attempt", "attempt-2"), `{"id":5,"result":{"accountId":"account-2"}}`)
	a.exchange(fmt.Sprintf(bound, 6, "gho_octocat", "account", "account", "account-1"), `{"id":6,"error":{"code":-32011}}`)
	a.exchange(fmt.Sprintf(bound, 7, "gho_hubot", "account", "account", "account-2"), `{"id":7,"result":{"accountId":"account-2"}}`)
}

// TestAccountsRenewAfterExpiry: a credential that expired is still the
// account's: it is renewed with binding {kind: "account"}, same id.
func TestAccountsRenewAfterExpiry(t *testing.T) {
	clock := tokenfake.NewClock()
	h := newTestHost(t, ahpTwoUsersConfig, Options{Now: clock.Now})
	f := frames{t, pipeConn(t, h, 0)}
	f.exchange(init110, `{"id":1}`)
	f.exchange(fmt.Sprintf(begin, 2), `{"id":2,"result":{"attemptId":"attempt-1"}}`)
	f.exchange(`{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"channel":"ahp-root://","resource":"https://api.github.com","token":"gho_octocat","expiresIn":60,"binding":{"kind":"attempt","attemptId":"attempt-1"}}}`,
		`{"id":3,"result":{"accountId":"account-1"}}`)
	clock.Advance(2 * time.Minute)
	f.exchange(`{"jsonrpc":"2.0","id":4,"method":"listSessions","params":{"channel":"ahp-root://"}}`, "")
	m := f.read()
	for m["id"] == nil { // auth/required, then the -32007
		m = f.read()
	}
	if !strings.Contains(fmt.Sprint(m["error"]), "-32007") {
		t.Fatalf("listSessions after expiry: %v, want -32007", m)
	}
	f.exchange(fmt.Sprintf(bound, 5, "gho_octocat", "account", "account", "account-1"), `{"id":5,"result":{"accountId":"account-1"}}`)
}

// TestAccountsRemovedShared: with grants shared by the host's
// connections, one client's accounts/removed releases the credential for
// all: another connection subscribed to ahp-accounts:// is told
// auth/required, then gets the echo with the remover's origin.
func TestAccountsRemovedShared(t *testing.T) {
	h := newTestHost(t, ahpTwoUsersConfig, Options{AuthScope: AuthScopeHost})
	a := frames{t, pipeConn(t, h, 0)}
	a.exchange(init110, `{"id":1}`)
	a.exchange(fmt.Sprintf(begin, 2), `{"id":2,"result":{"attemptId":"attempt-1"}}`)
	a.exchange(fmt.Sprintf(bound, 3, "gho_octocat", "attempt", "attempt", "attempt-1"), `{"id":3,"result":{"accountId":"account-1"}}`)
	b := frames{t, pipeConn(t, h, 0)}
	b.exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.1.0"],"clientId":"b","initialSubscriptions":["ahp-accounts://"]}}`,
		`{"id":1,"result":{"snapshots":[{"resource":"ahp-accounts://","state":{"accounts":[{"id":"account-1","label":"octocat","removable":true,"consumers":[{"kind":"agent","provider":"agentauth","resource":"https://api.github.com"}]}],"attempts":[{"id":"attempt-1","status":"completed","accountId":"account-1"}]}}]}}`)
	a.exchange(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-accounts://","clientSeq":1,"action":{"type":"accounts/removed","id":"account-1"}}}`, "")
	// b hears of the removal (its credential released, the action echoed)
	// before it asks anything: a's notification may be handled after b's
	// next request otherwise.
	for _, want := range []string{`{"method":"auth/required","params":{"reason":"required"}}`,
		`{"method":"action","params":{"channel":"ahp-accounts://","origin":{"clientId":"c","clientSeq":1},"action":{"type":"accounts/removed","id":"account-1"}}}`} {
		var w any
		json.Unmarshal([]byte(want), &w)
		if err := contains(w, any(b.read()), "$"); err != nil {
			t.Error(err)
		}
	}
	b.exchange(`{"jsonrpc":"2.0","id":2,"method":"listSessions","params":{"channel":"ahp-root://"}}`, `{"id":2,"error":{"code":-32007}}`)
}
