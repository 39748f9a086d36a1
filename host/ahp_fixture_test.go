package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// ahpFixtureConfig makes the host the shipped specification's example
// agent (authentication.md, "Discovery").
const ahpFixtureConfig = `{"resource": "https://api.github.com", "schemes": [
  {"id": "copilot", "label": "GitHub Copilot", "authorizationServers": ["https://github.com/login/oauth"],
   "scopesSupported": ["read:user", "user:email"],
   "validation": {"type": "static", "tokens": [{"token": "gho_xxxxxxxxxxxx", "subject": "octocat"},
     {"token": "gho_hubot0000000", "subject": "hubot"}]}}]}`

// TestAHPFixtures plays the raw frames of testdata/ahp/*.json, taken from
// the shipped Agent Host Protocol, against the host (see the README there).
func TestAHPFixtures(t *testing.T) {
	files, err := filepath.Glob("../testdata/ahp/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var fx struct {
				Source []string `json:"source"`
				Frames []struct {
					Send   json.RawMessage `json:"send"`
					Expect json.RawMessage `json:"expect"`
				} `json:"frames"`
			}
			if err := json.Unmarshal(b, &fx); err != nil {
				t.Fatal(err)
			}
			if len(fx.Source) == 0 {
				t.Fatal("the fixture cites no source")
			}
			h := newTestHost(t, ahpFixtureConfig, Options{})
			conn := pipeConn(t, h, 0)
			for i, fr := range fx.Frames {
				ctx, cancel := context.WithTimeout(context.Background(), pushWait)
				if fr.Send != nil {
					var c bytes.Buffer
					json.Compact(&c, fr.Send)
					if err := conn.Write(ctx, c.Bytes()); err != nil {
						t.Fatalf("frame %d: %v", i, err)
					}
				} else {
					got, err := readFrame(ctx, conn)
					if err != nil {
						t.Fatalf("frame %d: %v", i, err)
					}
					var want, have any
					json.Unmarshal(fr.Expect, &want)
					if err := json.Unmarshal(got, &have); err != nil {
						t.Fatalf("frame %d: %v", i, err)
					}
					if err := contains(want, have, "$"); err != nil {
						t.Errorf("frame %d: %v\ngot: %s", i, err, got)
					}
				}
				cancel()
			}
		})
	}
}

// readFrame reads the next frame from conn, or fails when ctx ends
// first: a frame that never comes fails the test rather than hanging it
// (a pipe's Read ignores its context; the read left waiting ends when the
// test closes conn).
func readFrame(ctx context.Context, conn wire.Conn) ([]byte, error) {
	type frame struct {
		b   []byte
		err error
	}
	ch := make(chan frame, 1)
	go func() {
		b, err := conn.Read(ctx)
		ch <- frame{b, err}
	}()
	select {
	case f := <-ch:
		return f.b, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no frame came: %w", ctx.Err())
	}
}

// contains checks that have holds want: every key of a wanted object,
// arrays of the same length element by element, {} only as {}, and
// "<any>" as any value and "<iso8601>" as a date-time string (RFC 3339,
// the form of JavaScript's toISOString).
func contains(want, have any, path string) error {
	if want == "<any>" {
		if have == nil {
			return fmt.Errorf("%s: missing", path)
		}
		return nil
	}
	if want == "<iso8601>" {
		if s, ok := have.(string); !ok {
			return fmt.Errorf("%s: got %v, want an ISO 8601 string", path, have)
		} else if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %v, want an object", path, have)
		}
		if len(w) == 0 && len(h) != 0 {
			return fmt.Errorf("%s: got %v, want {}", path, have)
		}
		for k, v := range w {
			hv, ok := h[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing", path, k)
			}
			if err := contains(v, hv, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return fmt.Errorf("%s: got %v, want %d elements", path, have, len(w))
		}
		for i := range w {
			if err := contains(w[i], h[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	default:
		if want != have {
			return fmt.Errorf("%s: got %v, want %v", path, have, want)
		}
		return nil
	}
}
