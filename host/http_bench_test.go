package host

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/internal/devlogin"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// BenchmarkMCPAuthenticatedPost measures POST /mcp (a whoami request) over
// real HTTP on loopback from parallel clients, with an ES256 access token
// from the embedded issuer validated as serve does by default (jwt, keys
// from the issuer's JWKS). The token is checked once; every later request
// is a grant-cache hit. Run: go test -run '^$' -bench MCPAuthenticatedPost ./host
func BenchmarkMCPAuthenticatedPost(b *testing.B) { benchmarkMCPPost(b, true, false) }

// BenchmarkMCPAuthenticatedPostNoCache is the same with a grant cache that
// never hits, so that every request verifies the ES256 signature.
func BenchmarkMCPAuthenticatedPostNoCache(b *testing.B) { benchmarkMCPPost(b, false, false) }

// BenchmarkMCPPostDPoP is BenchmarkMCPAuthenticatedPost with a DPoP-bound
// token (RFC 9449) presented with a proof per request, which the HTTP face
// verifies (ES256 signature, htm, htu, iat, ath, jkt) and records in its
// jti cache. The proofs are signed before the timer starts: the figures
// are the server's. Run: go test -run '^$' -bench 'MCPAuthenticatedPost$|MCPPostDPoP' ./host
func BenchmarkMCPPostDPoP(b *testing.B) { benchmarkMCPPost(b, true, true) }

func benchmarkMCPPost(b *testing.B, cache, dpop bool) {
	ln, origin, iss, h := benchHost(b, nil)
	if !cache {
		// Every entry is stale for a clock this far ahead.
		farFuture := time.Now().AddDate(100, 0, 0)
		sc := h.r().schemes[0]
		sc.checker = resource.NewChecker(sc.ID, resource.NewValidator(sc.Scheme, h.client, h.now), 0, func() time.Time { return farFuture }, nil)
	}
	mux := http.NewServeMux()
	for _, p := range iss.Paths() {
		mux.Handle(p, iss.Handler())
	}
	// One key sends every proof: room for all of them.
	h.dpopProofs = bounded.Limits{PerOwner: b.N + 1, Owners: 1, Retry: time.Minute}
	mux.Handle("/", h.HTTPHandler())
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	b.Cleanup(srv.Close)

	var key *wire.DPoPKey
	if dpop {
		var err error
		if key, _, err = wire.NewDPoPKey(); err != nil {
			b.Fatal(err)
		}
	}
	token := embeddedToken(b, origin, key)
	// With DPoP, one proof per request (and one for the warm-up), signed
	// beforehand.
	var proofs []string
	if dpop {
		proofs = make([]string, b.N+1)
		for i := range proofs {
			var err error
			if proofs[i], err = key.Proof(http.MethodPost, origin+"/mcp", token, "", time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	}
	var next atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"whoami"}`)
	post := func() error {
		req, err := http.NewRequest(http.MethodPost, origin+"/mcp", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if dpop {
			req.Header.Set("Authorization", "DPoP "+token)
			req.Header.Set("DPoP", proofs[next.Add(1)-1])
		} else {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return &url.Error{Op: "POST", URL: req.URL.String(), Err: io.ErrUnexpectedEOF}
		}
		return nil
	}
	if err := post(); err != nil { // fetch the JWKS outside the timing
		b.Fatal(err)
	}
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := post(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// benchHost is what the benchmarks serve: a loopback listener, the
// embedded issuer on its origin, and a host whose one scheme validates that
// issuer's JWTs, as serve's default does. logger nil is the host's default.
func benchHost(b *testing.B, logger *slog.Logger) (net.Listener, string, *issuer.Issuer, *Host) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	iss, err := issuer.New(issuer.Options{Issuer: origin, AutoApprove: true})
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := ParseConfig([]byte(`{"schemes": [{"id": "dev", "authorizationServers": ["embedded"], "scopesSupported": ["agent:use"], "validation": {"type": "jwt"}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	cfg.Resolve(origin)
	h, err := New(Options{Config: cfg, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	return ln, origin, iss, h
}

// embeddedToken signs in to the auto-approving embedded issuer at origin
// for its /mcp resource (devlogin.Token); with key, DPoP-bound.
func embeddedToken(b *testing.B, origin string, key *wire.DPoPKey) string {
	b.Helper()
	token, err := devlogin.Token(http.DefaultClient, origin, origin+"/mcp", key)
	if err != nil {
		b.Fatal(err)
	}
	return token
}
