package ops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.Audit(EventLogin, "sub", "alice")
	r.TokenIssued("authorization_code")
	r.Validation("accepted")
	r.Refusal("policy")
	r.ConnectionOpened()
	r.ConnectionClosed()
	r.BrokerSignIn("signed_in")
	r.RevocationLagFrom(func() time.Duration { return 0 })
	h := http.NotFoundHandler()
	if got := r.Instrument(h); got == nil {
		t.Fatal("Instrument on nil returned nil")
	}
}

func TestForwarded(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"127.0.0.0/8", "::1", "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                 string
		header               string // --trusted-proxy-header ("" is the default)
		remote               string
		headers              map[string][]string
		wantRemote, wantHost string
		wantScheme           string
	}{
		{"untrusted peer: ignored", "", "192.0.2.1:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.1"}, "X-Forwarded-Host": {"evil.example"}}, "192.0.2.1:4000", "svc:80", ""},
		{"untrusted peer: Forwarded ignored", "", "192.0.2.1:4000", map[string][]string{"Forwarded": {"for=198.51.100.1"}}, "192.0.2.1:4000", "svc:80", ""},
		{"x-forwarded", "", "127.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.9, 198.51.100.1"}, "X-Forwarded-Host": {"agents.example"}, "X-Forwarded-Proto": {"https"}}, "198.51.100.1:0", "agents.example", "https"},
		// HAProxy's option forwardfor adds its own line after the client's.
		{"client-sent X-Forwarded-For line: the proxy's line wins", "", "127.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"203.0.113.66", "198.51.100.1"}}, "198.51.100.1:0", "svc:80", ""},
		{"client-sent Forwarded: ignored by default", "", "127.0.0.1:4000", map[string][]string{"Forwarded": {"for=203.0.113.66;host=evil.example;proto=https"}, "X-Forwarded-For": {"198.51.100.1"}}, "198.51.100.1:0", "svc:80", ""},
		{"client-sent Forwarded, no X-Forwarded-For: the peer stays", "", "127.0.0.1:4000", map[string][]string{"Forwarded": {"for=203.0.113.66"}}, "127.0.0.1:4000", "svc:80", ""},
		{"trusted hops skipped from the right", "", "127.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"203.0.113.66, 198.51.100.1, 10.1.2.3"}}, "198.51.100.1:0", "svc:80", ""},
		{"a client claiming a trusted address gets its real one", "", "127.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"10.9.9.9, 198.51.100.1"}}, "198.51.100.1:0", "svc:80", ""},
		{"every hop trusted: the left-most", "", "127.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"10.0.0.7, 10.0.0.8"}}, "10.0.0.7:0", "svc:80", ""},
		{"bracketed IPv6 with a port", "", "[::1]:4000", map[string][]string{"X-Forwarded-For": {"[2001:db8::1]:443"}}, "[2001:db8::1]:0", "svc:80", ""},
		{"garbage for: address kept", "", "127.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"unknown"}}, "127.0.0.1:4000", "svc:80", ""},
		{"garbage right of a forged address: address kept", "", "127.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.1, unknown"}}, "127.0.0.1:4000", "svc:80", ""},
		{"a zone is no address", "", "127.0.0.1:4000", map[string][]string{"X-Forwarded-For": {"fe80::1%eth0"}}, "127.0.0.1:4000", "svc:80", ""},
		{"odd proto ignored", "", "127.0.0.1:4000", map[string][]string{"X-Forwarded-Proto": {"javascript"}}, "127.0.0.1:4000", "svc:80", ""},
		{"rfc 7239 configured", "Forwarded", "[::1]:4000", map[string][]string{"Forwarded": {`for=198.51.100.2;host=a.example;proto=https, for="[2001:db8::1]:80";host=b.example;proto=http`}, "X-Forwarded-Host": {"c.example"}, "X-Forwarded-For": {"203.0.113.66"}}, "[2001:db8::1]:0", "b.example", "http"},
		{"rfc 7239: trusted hop skipped, its element's host is the client's", "Forwarded", "127.0.0.1:4000", map[string][]string{"Forwarded": {"for=203.0.113.66;host=evil.example", "for=198.51.100.2;host=a.example;proto=https", "for=10.0.0.5;host=inner.example"}}, "198.51.100.2:0", "a.example", "https"},
		{"rfc 7239: obfuscated node keeps the peer", "Forwarded", "127.0.0.1:4000", map[string][]string{"Forwarded": {"for=198.51.100.2, for=_hidden"}}, "127.0.0.1:4000", "svc:80", ""},
		{"another header configured", "X-Real-IP", "127.0.0.1:4000", map[string][]string{"X-Real-Ip": {"198.51.100.3"}, "X-Forwarded-For": {"203.0.113.66"}, "Forwarded": {"for=203.0.113.67"}}, "198.51.100.3:0", "svc:80", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *http.Request
			h := Forwarded(trusted, tt.header, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r }))
			req := httptest.NewRequest("GET", "/healthz", nil)
			req.Host = "svc:80"
			req.RemoteAddr = tt.remote
			for k, vs := range tt.headers {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if got.RemoteAddr != tt.wantRemote || got.Host != tt.wantHost || got.URL.Scheme != tt.wantScheme {
				t.Errorf("got remote %q host %q scheme %q, want %q %q %q", got.RemoteAddr, got.Host, got.URL.Scheme, tt.wantRemote, tt.wantHost, tt.wantScheme)
			}
			if !peerTrusted(trusted, tt.remote) && (got.Header.Get("X-Forwarded-Host") != "" || got.Header.Get("Forwarded") != "") {
				t.Error("an untrusted peer's forwarded headers were passed on")
			}
			if tt.header != "Forwarded" && got.Header.Get("Forwarded") != "" {
				t.Error("a Forwarded header that was not believed was passed on")
			}
		})
	}
	if _, err := ParseTrustedProxies([]string{"10.0.0.0/33"}); err == nil {
		t.Error("a bad prefix was accepted")
	}
	for in, want := range map[string]string{"x-forwarded-for": "X-Forwarded-For", "forwarded": "Forwarded", "X-Real-IP": "X-Real-Ip", "": "", "X Bad": "", "Host": "", "x-forwarded-proto": ""} {
		got, err := ParseAddressHeader(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("ParseAddressHeader(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestReadyz(t *testing.T) {
	down := errors.New("connection refused")
	var fail bool
	h := Readyz(Check{Name: "state", Check: func(context.Context) error {
		if fail {
			return down
		}
		return nil
	}})
	for _, tt := range []struct {
		fail bool
		code int
		body string
	}{{false, 200, `{"state":"ok"}`}, {true, 503, `{"state":"failing: connection refused"}`}} {
		fail = tt.fail
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		if w.Code != tt.code || strings.TrimSpace(w.Body.String()) != tt.body {
			t.Errorf("fail=%v: %d %s, want %d %s", tt.fail, w.Code, w.Body, tt.code, tt.body)
		}
	}
}

func TestRevocationLagIsReadAtScrape(t *testing.T) {
	r := New(nil)
	lag := 3 * time.Second
	r.RevocationLagFrom(func() time.Duration { return lag })
	scrape := func() string {
		rec := httptest.NewRecorder()
		r.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	if body := scrape(); !strings.Contains(body, "agentauth_replica_revocation_lag_seconds 3\n") {
		t.Fatalf("lag 3s not scraped:\n%s", body)
	}
	lag = 500 * time.Millisecond
	if body := scrape(); !strings.Contains(body, "agentauth_replica_revocation_lag_seconds 0.5\n") {
		t.Fatalf("lag 0.5s not scraped:\n%s", body)
	}
}

// TestInstrumentMethods: requests are timed by route, method and code; a
// method HTTP does not define is counted as "other", one series however
// many such methods come.
func TestInstrumentMethods(t *testing.T) {
	r := New(nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/x", func(w http.ResponseWriter, req *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := r.Instrument(mux)
	for _, m := range []string{"GET", "GET", "POST", "FOO", "BAR", "BAZ"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(m, "/x", nil))
	}
	got := map[string]uint64{}
	mfs, err := r.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "agentauth_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["route"]+" "+labels["method"]+" "+labels["code"]] = m.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{"/x GET 418": 2, "/x POST 418": 1, "/x other 418": 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("latency series %v, want %v", got, want)
	}
}
