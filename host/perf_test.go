package host

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/syncbuf"
)

// An accepted request of the HTTP face logs nothing at the default level
// (Info); a refused one logs one line; the per-minute summary counts both.
func TestHTTPAcceptedRequestLogsNothingAtInfo(t *testing.T) {
	var logs syncbuf.Buffer
	h := newTestHost(t, baseConfig, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	face := h.HTTPHandler()
	body := `{"jsonrpc":"2.0","id":1,"method":"whoami"}`

	for range 3 {
		if a := post(t, face, "/mcp", body, bearer("t-alice")); a.status != 200 {
			t.Fatalf("accepted request: %d %s", a.status, a.body)
		}
	}
	if got := logs.String(); got != "" {
		t.Errorf("3 accepted requests logged %q, want nothing at Info", got)
	}
	if a := post(t, face, "/mcp", body, bearer("t-wrong")); a.status != 401 {
		t.Fatalf("refused request: %d %s", a.status, a.body)
	}
	lines := strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `msg="auth decision" face=http scheme=dev outcome=rejected`) {
		t.Errorf("a refused request logged %q, want one auth decision line", lines)
	}

	h.logSummary(time.Minute)
	h.logSummary(time.Minute) // nothing happened since: no line
	lines = strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `msg="auth summary" face=http accepted=3 refused=1 interval=1m0s`) {
		t.Errorf("logs %q, want one summary line with accepted=3 refused=1", lines)
	}
}
