package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStressStreams: many sessions at once through the gateway to an HTTP
// backend answering in event streams (log notifications, then the
// result) and in JSON: every caller gets its own answer, and only its own
// notifications, whole, over the pooled connections. (Not every log
// notification arrives: the SDK's server may send one on the session's
// GET stream, which the client opens late.)
func TestStressStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	for _, jsonAnswers := range []bool{false, true} {
		t.Run(fmt.Sprint("json=", jsonAnswers), func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "stress", Version: "1"}, nil)
			mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
				for i := range 3 {
					req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("%s log %d", a.Text, i)})
					time.Sleep(time.Millisecond)
				}
				return text(a.Text), nil, nil
			})
			be := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonAnswers}))
			t.Cleanup(be.Close) // after the clients' sessions, which the backend waits for
			srv, _ := front(t, Backend{Name: "b", URL: be.URL}, Policy{})
			var wg sync.WaitGroup
			errs := make(chan error, 1000)
			for w := range 16 {
				wg.Go(func() {
					var mu sync.Mutex
					var logs []string
					cs := connect(t, srv.URL, "tok-writer-0123456789", &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
						mu.Lock()
						logs = append(logs, fmt.Sprint(r.Params.Data))
						mu.Unlock()
					}})
					if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
						errs <- err
						return
					}
					for i := range 40 {
						want := fmt.Sprintf("worker %d call %d", w, i)
						r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
						if err != nil {
							errs <- fmt.Errorf("%s: %v", want, err)
							return
						}
						if got := resultText(t, r); got != want {
							errs <- fmt.Errorf("%s: answer %q", want, got)
						}
					}
					mu.Lock()
					defer mu.Unlock()
					for _, l := range logs {
						var ww, ii, n int
						if _, err := fmt.Sscanf(l, "worker %d call %d log %d", &ww, &ii, &n); err != nil || ww != w {
							errs <- fmt.Errorf("worker %d got log %q", w, l)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
