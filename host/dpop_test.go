package host

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/internal/devlogin"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/wire"
)

// The resource's DPoP replay cache cannot be flushed: an attacker with a
// bound token of their own who sends more proofs than the cache holds for
// a key gets 429 for the extra ones (not success by evicting an earlier
// proof), a third key past the owners' bound gets 503, both with
// Retry-After, and a captured victim proof stays a replay.
func TestDPoPReplayCacheCannotBeFlushed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	iss, err := issuer.New(issuer.Options{Issuer: origin, AutoApprove: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig([]byte(`{"schemes": [{"id": "dev", "authorizationServers": ["embedded"], "scopesSupported": ["agent:use"], "validation": {"type": "jwt"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resolve(origin)
	h, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	face := h.HTTPHandler().(*httpFace)
	face.jtis = bounded.NewMemory(bounded.Limits{PerOwner: 3, Owners: 2, Retry: time.Minute})
	mux := http.NewServeMux()
	for _, p := range iss.Paths() {
		mux.Handle(p, iss.Handler())
	}
	mux.Handle("/", face)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)

	login := func() (*wire.DPoPKey, string) {
		key, _, err := wire.NewDPoPKey()
		if err != nil {
			t.Fatal(err)
		}
		token, err := devlogin.Token(http.DefaultClient, origin, origin+"/mcp", key)
		if err != nil {
			t.Fatal(err)
		}
		return key, token
	}
	proof := func(key *wire.DPoPKey, token string) string {
		p, err := key.Proof(http.MethodPost, origin+"/mcp", token, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	post := func(token, proof string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, origin+"/mcp", bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"whoami"}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "DPoP "+token)
		req.Header.Set(wire.HeaderDPoP, proof)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	wantStatus := func(what string, resp *http.Response, status int) {
		t.Helper()
		if resp.StatusCode != status {
			t.Fatalf("%s: status %d, want %d", what, resp.StatusCode, status)
		}
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("%s: Retry-After %q, want whole seconds", what, resp.Header.Get("Retry-After"))
			}
		}
	}

	victimKey, victimToken := login()
	captured := proof(victimKey, victimToken)
	wantStatus("the victim's request", post(victimToken, captured), http.StatusOK)

	attackerKey, attackerToken := login()
	for range 3 {
		wantStatus("the attacker's proofs within the bound", post(attackerToken, proof(attackerKey, attackerToken)), http.StatusOK)
	}
	for range 20 {
		wantStatus("the attacker's proofs past the bound", post(attackerToken, proof(attackerKey, attackerToken)), http.StatusTooManyRequests)
	}
	wantStatus("the captured proof replayed", post(victimToken, captured), http.StatusUnauthorized)

	thirdKey, thirdToken := login()
	wantStatus("a third key past the owners' bound", post(thirdToken, proof(thirdKey, thirdToken)), http.StatusServiceUnavailable)
	// The victim, whose key holds one proof, goes on.
	wantStatus("the victim's next request", post(victimToken, proof(victimKey, victimToken)), http.StatusOK)
}
