package commands

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/oauthfake"
	"github.com/agentauth/agentauth/store"
)

// testFactory is a Factory with test streams, the memory store (unless
// st is given) and the fetching browser on a pretend terminal.
type testFactory struct {
	*Factory
	in          *strings.Reader
	out, errOut *bytes.Buffer
	st          store.Store
}

func newTestFactory(t *testing.T, stdin string) *testFactory {
	t.Helper()
	t.Setenv(store.EnvConfigDir, t.TempDir())
	tf := &testFactory{in: strings.NewReader(stdin), out: &bytes.Buffer{}, errOut: &bytes.Buffer{}, st: store.NewMemory()}
	tf.Factory = &Factory{
		IO:           &IOStreams{In: tf.in, Out: tf.out, ErrOut: tf.errOut, StdoutTTY: true, StderrTTY: false},
		HTTPClient:   &http.Client{Timeout: 10 * time.Second},
		Now:          time.Now,
		OpenStore:    func() (store.Store, error) { return tf.st, nil },
		ProbeKeyring: func(context.Context) error { t.Error("the keyring was probed"); return nil },
		OpenURL:      oauthfake.FetchBrowser,
	}
	return tf
}

// run runs agentauth with args and returns the exit code.
func (tf *testFactory) run(args ...string) int {
	return Run(tf.Factory, append([]string{"agentauth"}, args...))
}

// assertNoSecrets fails when any output holds a token, code or secret.
func assertNoSecrets(t *testing.T, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		for _, s := range []string{"rt-secret", "at-secret", "good-code", "dev-code-secret", "dcr-secret", "s3cret", oauthfake.JWTHeader} {
			if strings.Contains(o, s) {
				t.Errorf("output reveals a secret (%s):\n%s", s, o)
			}
		}
	}
}
