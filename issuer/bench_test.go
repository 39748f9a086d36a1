package issuer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/benchstat"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/state/statetest"
)

// BenchmarkTokenEndpoint measures the token endpoint on each state store,
// through the issuer's handler (no network): authorization_code is one
// code exchange (the auto-approved /authorize that issues the code runs
// outside the timer), refresh one refresh token rotation. cpu-ns/op is the
// process's CPU time per operation, which other load on the machine
// disturbs less than wall time. Each operation moves a fake clock one second on, and
// access tokens live one second, so that, as in a real deployment, a
// family holds few live tokens and sweeps run now and then (every 30
// operations). Run with:
//
//	go test -run '^$' -bench TokenEndpoint ./issuer/
func BenchmarkTokenEndpoint(b *testing.B) {
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			h, clock := benchIssuer(b, name, time.Second)
			b.Run("authorization_code", func(b *testing.B) {
				var cpu time.Duration
				for b.Loop() {
					b.StopTimer()
					clock.advance(time.Second)
					form := benchCode(b, h)
					b.StartTimer()
					start := benchstat.SelfCPU()
					benchToken(b, h, form)
					cpu += benchstat.SelfCPU() - start
				}
				reportCPU(b, cpu)
			})
			b.Run("refresh", func(b *testing.B) {
				rt := benchToken(b, h, benchCode(b, h))
				start := benchstat.SelfCPU()
				for b.Loop() {
					clock.advance(time.Second)
					rt = benchToken(b, h, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {issuer.CLIClientID}})
				}
				reportCPU(b, benchstat.SelfCPU()-start)
			})
			b.Run("client_credentials", func(b *testing.B) {
				w := httptest.NewRecorder()
				r := httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(
					`{"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_post"}`))
				r.Header.Set("Content-Type", "application/json")
				h.ServeHTTP(w, r)
				var reg struct {
					ID     string `json:"client_id"`
					Secret string `json:"client_secret"`
				}
				if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &reg) != nil {
					b.Fatalf("register: %d %s", w.Code, w.Body)
				}
				body := url.Values{"grant_type": {"client_credentials"}, "client_id": {reg.ID}, "client_secret": {reg.Secret}}.Encode()
				b.ReportAllocs()
				start := benchstat.SelfCPU()
				for b.Loop() {
					clock.advance(time.Millisecond)
					w := httptest.NewRecorder()
					r := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(body))
					r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					h.ServeHTTP(w, r)
					if w.Code != http.StatusOK {
						b.Fatalf("token: %d %s", w.Code, w.Body)
					}
				}
				reportCPU(b, benchstat.SelfCPU()-start)
			})
		})
	}
}

// reportCPU reports CPU time used per operation, where it can be
// measured.
func reportCPU(b *testing.B, used time.Duration) {
	if used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// benchCode runs an auto-approved authorization request and returns the
// form that redeems its code.
func benchCode(b *testing.B, h http.Handler) url.Values {
	a := newAuthz(issuer.CLIClientID, cliRedirect)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/authorize?"+a.query.Encode(), nil))
	loc, err := url.Parse(w.Header().Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		b.Fatalf("authorize: %d %s", w.Code, w.Body)
	}
	return url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {cliRedirect}, "code_verifier": {a.verifier}, "client_id": {issuer.CLIClientID}}
}

func benchToken(b *testing.B, h http.Handler, form url.Values) string {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	h.ServeHTTP(w, r)
	var tok struct {
		RefreshToken string `json:"refresh_token"`
	}
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &tok) != nil || tok.RefreshToken == "" {
		b.Fatalf("token: %d %s", w.Code, w.Body)
	}
	return tok.RefreshToken
}

// benchIssuer is the handler of an auto-approving issuer on a store of the
// kind name (benchStore) whose access tokens live ttl, and the fake clock
// it reads.
func benchIssuer(b *testing.B, name string, ttl time.Duration) (http.Handler, *fakeClock) {
	clock := &fakeClock{now: epoch}
	iss, err := issuer.New(issuer.Options{Issuer: "http://127.0.0.1:1", AutoApprove: true, Store: benchStore(b, name),
		TokenTTL: ttl, Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	return iss.Handler(), clock
}

// benchStore opens a state store of the kind name (memory, sqlite,
// postgres) for a benchmark; postgres skips without PostgreSQL.
func benchStore(b *testing.B, name string) state.Store {
	var st interface {
		state.Store
		Close() error
	}
	var err error
	switch name {
	case "memory":
		return state.NewMemory()
	case "sqlite":
		st, err = state.OpenSQLite(context.Background(), b.TempDir())
	default:
		st, err = state.OpenPostgres(context.Background(), statetest.Postgres(b))
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkRefreshGrowth rotates 16 refresh chains in turn through the
// issuer's handler on each store, as refresh.sh does over HTTP but with
// nothing else in the process, and reports the CPU per refresh of the
// first and of the last tenth of the run and their ratio: a cost that grows
// with the refresh tokens kept for reuse detection shows as a ratio above
// 1. Access tokens live an hour and the clock moves a millisecond per
// refresh, so nothing expires during the run. Run it long:
//
//	go test -run '^$' -bench RefreshGrowth -benchtime 200000x ./issuer/
func BenchmarkRefreshGrowth(b *testing.B) {
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			h, clock := benchIssuer(b, name, time.Hour)
			chains := make([]string, 16)
			for c := range chains {
				chains[c] = benchToken(b, h, benchCode(b, h))
			}
			tenth := max(b.N/10, 1)
			var first, lastFrom time.Duration
			b.ResetTimer()
			start := benchstat.SelfCPU()
			for i := range b.N {
				switch i {
				case tenth:
					first = benchstat.SelfCPU() - start
				case b.N - tenth:
					lastFrom = benchstat.SelfCPU()
				}
				clock.advance(time.Millisecond)
				c := i % len(chains)
				chains[c] = benchToken(b, h, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {chains[c]}, "client_id": {issuer.CLIClientID}})
			}
			last := benchstat.SelfCPU() - lastFrom
			reportCPU(b, benchstat.SelfCPU()-start)
			if b.N >= 20 && first > 0 {
				b.ReportMetric(float64(first.Nanoseconds())/float64(tenth), "first-cpu-ns/op")
				b.ReportMetric(float64(last.Nanoseconds())/float64(tenth), "last-cpu-ns/op")
				b.ReportMetric(float64(last)/float64(first), "last/first")
			}
		})
	}
}
