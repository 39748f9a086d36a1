package commands

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestEnvTokenGoesToTargetOnly: AGENTAUTH_TOKEN is sent to the TARGET
// named on the command line and never to the other origin it redirects
// to (the production HTTP client, wire.CheckRedirect).
func TestEnvTokenGoesToTargetOnly(t *testing.T) {
	const secret = "env-s3cret-token"
	t.Setenv(EnvToken, secret)
	var mu sync.Mutex
	var seenA, seenB []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seenB = append(seenB, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer other.Close()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seenA = append(seenA, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer target.Close()

	tf := newTestFactory(t, "")
	tf.HTTPClient = NewFactory().HTTPClient
	tf.run("call", target.URL+"/mcp", "tools/list")

	mu.Lock()
	defer mu.Unlock()
	if len(seenA) == 0 || seenA[0] != "Bearer "+secret {
		t.Errorf("the target got Authorization %q, want the environment's token", seenA)
	}
	if len(seenB) == 0 {
		t.Fatalf("the redirect was not followed; stderr:\n%s", tf.errOut)
	}
	for _, h := range seenB {
		if strings.Contains(h, secret) {
			t.Errorf("the other origin got the environment's token: %q", h)
		}
	}
	assertNoSecrets(t, tf.out.String(), tf.errOut.String())
	if strings.Contains(tf.out.String()+tf.errOut.String(), secret) {
		t.Errorf("the output shows the token:\n%s%s", tf.out, tf.errOut)
	}
}
