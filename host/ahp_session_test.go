package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// ahpTwoUsersConfig is ahpFixtureConfig with a second user's token.
const ahpTwoUsersConfig = `{"resource": "https://api.github.com", "schemes": [
  {"id": "copilot", "authorizationServers": ["https://github.com/login/oauth"],
   "validation": {"type": "static", "tokens": [{"token": "gho_octocat", "subject": "octocat"}, {"token": "gho_hubot", "subject": "hubot"}]}}]}`

// frames drives a raw AHP connection: each exchange sends a frame and,
// unless want is empty, checks the next frame read with contains.
type frames struct {
	t    *testing.T
	conn wire.Conn
}

func (f frames) exchange(send, want string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pushWait)
	defer cancel()
	if err := f.conn.Write(ctx, []byte(send)); err != nil {
		f.t.Fatal(err)
	}
	if want == "" {
		return
	}
	got, err := readFrame(ctx, f.conn)
	if err != nil {
		f.t.Fatal(err)
	}
	var w, h any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		f.t.Fatal(err)
	}
	json.Unmarshal(got, &h)
	if err := contains(w, h, "$"); err != nil {
		f.t.Errorf("after %s: %v\ngot: %s", send, err, got)
	}
}

// signedIn is a published-dialect connection authenticated with token.
func signedIn(t *testing.T, h *Host, token string) frames {
	f := frames{t, pipeConn(t, h, 0)}
	f.exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.9.0"],"clientId":"c"}}`,
		`{"id":1,"result":{"protocolVersion":"0.9.0"}}`)
	f.exchange(`{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"channel":"ahp-root://","resource":"https://api.github.com","token":"`+token+`"}}`,
		`{"id":2,"result":{}}`)
	return f
}

const sessionURI = "ahp-session:/0b5e1f5c-0000-4000-8000-000000000000"

// TestSessionChannelIsItsOwners: a session channel is subscribable by the
// principal that created it only; another's subscribe is SessionNotFound,
// and its disposal is pushed to the owner's subscribers only.
func TestSessionChannelIsItsOwners(t *testing.T) {
	h := newTestHost(t, ahpTwoUsersConfig, Options{})
	octocat := signedIn(t, h, "gho_octocat")
	hubot := signedIn(t, h, "gho_hubot")
	octocat.exchange(`{"jsonrpc":"2.0","id":3,"method":"createSession","params":{"channel":"`+sessionURI+`"}}`, `{"id":3,"result":null}`)
	hubot.exchange(`{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"channel":"`+sessionURI+`"}}`, `{"id":3,"error":{"code":-32001}}`)
	other := signedIn(t, h, "gho_octocat")
	other.exchange(`{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"channel":"`+sessionURI+`"}}`,
		`{"id":3,"result":{"snapshot":{"resource":"`+sessionURI+`","state":{"summary":{"resource":"`+sessionURI+`"},"lifecycle":"ready","turns":[]}}}}`)
	octocat.exchange(`{"jsonrpc":"2.0","id":4,"method":"disposeSession","params":{"channel":"`+sessionURI+`"}}`, `{"id":4,"result":null}`)
	other.exchange(`{"jsonrpc":"2.0","id":4,"method":"ping","params":{"channel":"ahp-root://"}}`,
		`{"method":"root/sessionRemoved","params":{"channel":"ahp-root://","session":"`+sessionURI+`"}}`)
	// hubot's ping is answered first: nothing was pushed to it.
	hubot.exchange(`{"jsonrpc":"2.0","id":4,"method":"ping","params":{"channel":"ahp-root://"}}`, `{"id":4,"result":null}`)
}

// TestInitialSubscriptionsNameASession: with grants shared by the host's
// connections, a new connection's initialize may name a session channel
// in initialSubscriptions and gets its snapshot; a channel it cannot have
// gets none.
func TestInitialSubscriptionsNameASession(t *testing.T) {
	h := newTestHost(t, ahpTwoUsersConfig, Options{AuthScope: AuthScopeHost})
	first := signedIn(t, h, "gho_octocat")
	first.exchange(`{"jsonrpc":"2.0","id":3,"method":"createSession","params":{"channel":"`+sessionURI+`"}}`, `{"id":3,"result":null}`)
	second := frames{t, pipeConn(t, h, 0)}
	second.exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.9.0"],"clientId":"d",`+
		`"initialSubscriptions":["ahp-root://","`+sessionURI+`","ahp-session:/11111111-0000-4000-8000-000000000000"]}}`,
		`{"id":1,"result":{"snapshots":[{"resource":"ahp-root://"},{"resource":"`+sessionURI+`","fromSeq":0,`+
			`"state":{"summary":{"resource":"`+sessionURI+`","provider":"agentauth","status":1},"lifecycle":"ready","turns":[]}}]}}`)
	// The initial subscription is live: the disposal is pushed.
	first.exchange(`{"jsonrpc":"2.0","id":4,"method":"disposeSession","params":{"channel":"`+sessionURI+`"}}`, `{"id":4,"result":null}`)
	second.exchange(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"channel":"ahp-root://"}}`,
		`{"method":"root/sessionRemoved","params":{"session":"`+sessionURI+`"}}`)
}

func TestCreateSessionCap(t *testing.T) {
	h := newTestHost(t, baseConfig, Options{})
	ctx := context.Background()
	alice := initialized(t, h, wire.DialectDesign)
	if err := authenticate(t, alice, "dev", "t-alice"); err != nil {
		t.Fatal(err)
	}
	var first struct {
		SessionID string `json:"sessionId"`
	}
	for i := range maxSessionsPerOwner {
		var s struct {
			SessionID string `json:"sessionId"`
		}
		if err := alice.Call(ctx, wire.MethodCreateSession, nil, &s); err != nil {
			t.Fatalf("createSession %d: %v", i+1, err)
		}
		if i == 0 {
			first = s
		}
	}
	err := alice.Call(ctx, wire.MethodCreateSession, nil, nil)
	var rpc *wire.Error
	if !errors.As(err, &rpc) || rpc.Code != codeSessionLimit || !strings.Contains(rpc.Message, `"alice" already has 100 live sessions`) ||
		!strings.Contains(rpc.Message, "disposeSession") {
		t.Fatalf("createSession over the cap: %v", err)
	}

	// Another owner is not affected; disposing of one makes room.
	bob := initialized(t, h, wire.DialectDesign)
	if err := authenticate(t, bob, "dev", "t-bob"); err != nil {
		t.Fatal(err)
	}
	if err := bob.Call(ctx, wire.MethodCreateSession, nil, nil); err != nil {
		t.Fatalf("bob: %v", err)
	}
	h.sessions.dispose(ctx, "alice", first.SessionID)
	if err := alice.Call(ctx, wire.MethodCreateSession, nil, nil); err != nil {
		t.Fatalf("after a dispose: %v", err)
	}
}
