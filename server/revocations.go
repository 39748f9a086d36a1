package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentauth/agentauth/state"
)

// refuseWhenStale answers 503 (temporarily_unavailable, Retry-After)
// while a PostgreSQL replica has not read the revocation log for longer
// than max: past that, a token revoked on another replica might be
// accepted here. A watcher logs when it starts and stops refusing, until
// ctx ends. Other stores are not shared between processes, and pass
// through.
func refuseWhenStale(ctx context.Context, next http.Handler, st state.Store, max time.Duration, logger *slog.Logger) http.Handler {
	pg, ok := st.(*state.Postgres)
	if !ok || max <= 0 {
		return next
	}
	go func() {
		t := time.NewTicker(max / 10)
		defer t.Stop()
		refusing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			switch err := pg.Stale(max); {
			case err != nil && !refusing:
				logger.Error("refusing every request with 503 until the revocation log can be read", "database", pg.Target(), "err", err)
			case err == nil && refusing:
				logger.Info("serving again: the revocation log is current", "database", pg.Target())
			}
			refusing = pg.Stale(max) != nil
		}
	}()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pg.Stale(max) == nil {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"temporarily_unavailable","error_description":"this replica cannot reach its state database and may not know of recent revocations; try again shortly"}` + "\n"))
	})
}
