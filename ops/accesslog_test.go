package ops

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// TestAccessLog: at debug, each request of the listener is one record
// with method, path, query parameter names, status, duration and client
// (the forwarded one behind a trusted proxy); the query values, headers
// and body, where codes, tokens and secrets travel, never appear; at info
// there is no record.
func TestAccessLog(t *testing.T) {
	var buf bytes.Buffer
	r := New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, req *http.Request) {
		req.ParseForm()
		w.WriteHeader(http.StatusBadRequest)
	})
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, req *http.Request) {})
	trusted := []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32")}
	h := r.Instrument(Forwarded(trusted, "", mux))

	get := httptest.NewRequest(http.MethodGet, "/callback?code=SECRET-CODE&state=SECRET-STATE&tkn=SECRET-TKN&%61ccess_token=SECRET-AT", nil)
	get.RemoteAddr = "192.0.2.1:4000"
	get.Header.Set("X-Forwarded-For", "198.51.100.7")
	get.Header.Set("Cookie", "session=SECRET-COOKIE")
	h.ServeHTTP(httptest.NewRecorder(), get)
	post := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader("grant_type=refresh_token&refresh_token=SECRET-RT&client_secret=SECRET-CS"))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.Header.Set("Authorization", "Bearer SECRET-BEARER")
	h.ServeHTTP(httptest.NewRecorder(), post)
	ws := httptest.NewRequest(http.MethodGet, "/ws?tkn=SECRET-WS", nil)
	ws.Header.Set("Upgrade", "websocket")
	h.ServeHTTP(httptest.NewRecorder(), ws)

	if strings.Contains(buf.String(), "SECRET") {
		t.Errorf("the access log holds a secret:\n%s", buf.String())
	}
	var recs []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		delete(m, "time")
		delete(m, "duration")
		recs = append(recs, m)
	}
	want := []map[string]any{
		{"level": "DEBUG", "msg": "http", "method": "GET", "path": "/callback", "query": "code&state&tkn&access_token", "status": float64(200), "client": "198.51.100.7:0"},
		{"level": "DEBUG", "msg": "http", "method": "POST", "path": "/token", "status": float64(400), "client": "192.0.2.1:1234"},
		{"level": "DEBUG", "msg": "http", "method": "GET", "path": "/ws", "query": "tkn", "upgrade": "websocket", "client": "192.0.2.1:1234"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(recs), len(want), buf.String())
	}
	for k := range want {
		for key, v := range want[k] {
			if recs[k][key] != v {
				t.Errorf("record %d: %s = %v, want %v", k, key, recs[k][key], v)
			}
		}
	}

	buf.Reset()
	quiet := New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	quiet.Instrument(mux).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/callback", nil))
	if buf.Len() != 0 {
		t.Errorf("at info: %s", buf.String())
	}
}
