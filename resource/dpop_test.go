package resource

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/wire"
)

// The DPoP replay cache cannot be flushed: an attacker with a bound token
// of their own who sends more proofs than the cache holds for a key gets
// 429 for the extra ones (not success by evicting an earlier proof), a
// third key past the owners' bound gets 503, both with Retry-After and a
// JSON-RPC error body, and a captured victim proof stays a replay; the
// victim goes on. Past the window there is room again.
func TestDPoPReplayCacheCannotBeFlushed(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	keys, grants := map[string]*wire.DPoPKey{}, map[string]*Grant{}
	for _, name := range []string{"victim", "attacker", "third"} {
		k, _, err := wire.NewDPoPKey()
		if err != nil {
			t.Fatal(err)
		}
		keys[name], grants["t-"+name] = k, &Grant{Subject: name, JKT: k.Thumbprint()}
	}
	mw := RequireBearerToken(tokenVerifier(grants), &BearerOptions{ResourceMetadataURL: metadataURL, Resource: protected,
		Now: func() time.Time { return now }, DPoPProofs: bounded.Limits{PerOwner: 3, Owners: 2, Retry: time.Minute}})
	proof := func(name string) string {
		p, err := keys[name].Proof(http.MethodPost, protected, "t-"+name, "", now)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	send := func(what, name, proof string, status int) {
		t.Helper()
		r := jsonPost("DPoP t-" + name)
		r.Header.Set(wire.HeaderDPoP, proof)
		rec, _ := serveProtected(t, mw, r)
		if rec.Code != status {
			t.Fatalf("%s: status %d, want %d; body %s", what, rec.Code, status, rec.Body)
		}
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("%s: Retry-After %q, want whole seconds", what, rec.Header().Get("Retry-After"))
			}
			if m, err := wire.Decode(rec.Body.Bytes()); err != nil || m.Error == nil || m.Error.Code != wire.CodeInvalidRequest {
				t.Errorf("%s: body %s, want a JSON-RPC invalid request error", what, rec.Body)
			}
		}
	}

	captured := proof("victim")
	send("the victim's request", "victim", captured, http.StatusNoContent)
	for range 3 {
		send("the attacker's proofs within the bound", "attacker", proof("attacker"), http.StatusNoContent)
	}
	for range 20 {
		send("the attacker's proofs past the bound", "attacker", proof("attacker"), http.StatusTooManyRequests)
	}
	send("the captured proof replayed", "victim", captured, http.StatusUnauthorized)
	send("a third key past the owners' bound", "third", proof("third"), http.StatusServiceUnavailable)
	send("the victim's next request", "victim", proof("victim"), http.StatusNoContent)

	now = now.Add(DPoPWindow)
	for range 3 {
		send("the attacker after the window", "attacker", proof("attacker"), http.StatusNoContent)
	}
	send("the third key after the window", "third", proof("third"), http.StatusNoContent)
}
