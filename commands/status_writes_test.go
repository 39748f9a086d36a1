package commands

import (
	"bytes"
	"testing"
	"time"

	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/store"
)

// writeCounter counts Write calls (each one a system call on a terminal
// or a pipe).
type writeCounter struct {
	buf    bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.buf.Write(p)
}

// status prints its report in one write, however many credentials.
func TestStatusWritesOnce(t *testing.T) {
	fx := newAuthFixture(t, host.AuthScopeConnection)
	fx.seed(jwtish, time.Hour, nil)
	for _, r := range []string{"https://other.example/mcp", "https://third.example/mcp"} {
		fx.seed(jwtish, time.Hour, func(c *store.Credential) { c.Resource, c.SchemeID, c.Target = r, "", "" })
	}
	run := fx.factory("")
	out := &writeCounter{}
	run.f.IO.Out = out
	if code := Run(run.f, fx.args([]string{"status"})); code != 0 {
		t.Fatalf("exit code %d; stderr %s", code, run.err.String())
	}
	if out.writes != 1 || !bytes.Contains(out.buf.Bytes(), []byte("https://third.example/mcp")) {
		t.Errorf("status made %d writes (want 1) of %q", out.writes, out.buf.String())
	}
}
