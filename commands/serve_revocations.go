package commands

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentauth/agentauth/state"
	"github.com/urfave/cli/v2"
)

// defaultRevocationStaleness is --revocation-staleness: with the default
// --revocation-reconcile (2s) a replica that reaches its database never
// comes near it.
const defaultRevocationStaleness = 10 * time.Second

// checkRevocationFlags checks --revocation-reconcile and
// --revocation-staleness: they apply to --database, and a replica must
// read the log more often than it may go without it.
func checkRevocationFlags(c *cli.Context, opts *ServeOptions) error {
	for _, name := range []string{"revocation-reconcile", "revocation-staleness"} {
		if c.IsSet(name) && opts.Database == "" {
			return usageErrorf("--%s applies to replicas sharing a --database", name)
		}
	}
	if opts.RevocationReconcile < 10*time.Millisecond {
		return usageErrorf("--revocation-reconcile must be at least 10ms, not %s", opts.RevocationReconcile)
	}
	if opts.RevocationStaleness < 2*opts.RevocationReconcile {
		return usageErrorf("--revocation-staleness (%s) must be at least twice --revocation-reconcile (%s), or a replica that reaches its database would refuse requests",
			opts.RevocationStaleness, opts.RevocationReconcile)
	}
	return nil
}

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
