package ops

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Check is one readiness check: nil when ready.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// readyTimeout bounds one /readyz answer: a store that does not answer
// within it is not ready.
const readyTimeout = 3 * time.Second

// Healthz answers /healthz: 200 as long as the process serves HTTP
// (liveness).
func Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
}

// Readyz answers /readyz: 200 when every check passes, else 503; the JSON
// body names each check and its state ("ok" or the failure, which carries
// no secret: the checks' errors name what failed, not credentials).
func Readyz(checks ...Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		status := http.StatusOK
		body := map[string]string{}
		for _, c := range checks {
			if err := c.Check(ctx); err != nil {
				status = http.StatusServiceUnavailable
				body[c.Name] = "failing: " + err.Error()
				continue
			}
			body[c.Name] = "ok"
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	})
}
