//go:build unix

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// TestRetryBeforeStaleClose: an MCP 2026-07-28 client retries with its
// input as soon as it has the input_required answer, which serve flushes
// before that answer's reply is closed; the late close must leave the
// call to the retry. (TestServerRequests/stdio hung about 1 run in 8: the
// first round's close unregistered the call the retry had resumed, the
// process's elicitation was refused and its answer dropped.) The process
// is stopped (SIGSTOP) while the late close runs, so that the order is
// the one of the flake every time.
func TestRetryBeforeStaleClose(t *testing.T) {
	g, err := New(Options{Backends: []Backend{stdioBackend(t)}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	sb := g.Mounts()[0].sharedProcess()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{}}}`
	call := func(id int, extra string) *reply {
		t.Helper()
		raw := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask","arguments":{},%s%s}}`, id, meta, extra))
		var msg wire.Message
		if err := json.Unmarshal(raw, &msg); err != nil {
			t.Fatal(err)
		}
		rep, err := sb.conn(callers["tok-writer-0123456789"], true).post(ctx, &msg, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	// result reads a reply to its answer.
	result := func(rep *reply) map[string]any {
		t.Helper()
		for {
			f, err := rep.next()
			if err == io.EOF {
				t.Fatal("the reply ended without an answer")
			}
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			if isResponse(f.data) {
				var m struct{ Result map[string]any }
				json.Unmarshal(f.data, &m)
				return m.Result
			}
		}
	}
	retry := func(r map[string]any, answer string) string {
		state, _ := r["requestState"].(string)
		if r["resultType"] != "input_required" || state == "" {
			t.Fatalf("got %v; want input_required", r)
		}
		return fmt.Sprintf(`,"inputResponses":{%q:%s},"requestState":%q`, inputKey, answer, state)
	}

	first := call(1, "")
	extra := retry(result(first), `{"model":"m","role":"assistant","content":{"type":"text","text":"hi"}}`)
	p := sb.live()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	second := call(2, extra)
	first.close() // after the retry took the call on
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	extra = retry(result(second), `{"action":"accept","content":{"name":"Ada"}}`)
	p.cmd.Process.Signal(syscall.SIGSTOP)
	third := call(3, extra)
	second.close()
	p.cmd.Process.Signal(syscall.SIGCONT)
	r := result(third)
	third.close()
	if r["resultType"] != "complete" || !strings.Contains(fmt.Sprint(r["content"]), "model said hi; user said Ada") {
		t.Errorf("last round: %v", r)
	}
	sb.cmu.Lock()
	defer sb.cmu.Unlock()
	if len(sb.inFlight) != 0 {
		t.Errorf("requests in flight after the call: %v; want none", sb.inFlight)
	}
}
