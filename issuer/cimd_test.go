package issuer_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
)

// docServer serves client ID metadata documents: each path answers with
// the body its function builds from the document's own URL.
func docServer(t *testing.T, fetches *atomic.Int32, docs map[string]func(self string) (string, string)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		ct, body := doc("http://" + r.Host + r.URL.Path)
		w.Header().Set("Content-Type", ct)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func cimdDoc(id string, extra map[string]any) string {
	m := map[string]any{"client_id": id, "client_name": "doc client", "redirect_uris": []string{"http://127.0.0.1/callback"}, "token_endpoint_auth_method": "none"}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestClientIDMetadataDocument(t *testing.T) {
	var fetches atomic.Int32
	docs := docServer(t, &fetches, map[string]func(string) (string, string){
		"/good.json": func(self string) (string, string) { return "application/json", cimdDoc(self, nil) },
		"/other.json": func(self string) (string, string) {
			return "application/json", cimdDoc("https://elsewhere.example/c.json", nil)
		},
		"/secret.json": func(self string) (string, string) {
			return "application/json", cimdDoc(self, map[string]any{"token_endpoint_auth_method": "client_secret_basic"})
		},
		"/web.json": func(self string) (string, string) {
			return "application/json", cimdDoc(self, map[string]any{"redirect_uris": []string{"https://app.example/cb"}})
		},
		"/text.json": func(self string) (string, string) { return "text/plain", cimdDoc(self, nil) },
		"/big.json": func(self string) (string, string) {
			return "application/json", cimdDoc(self, map[string]any{"pad": strings.Repeat("x", 65<<10)})
		},
	})
	s := start(t, issuer.Options{AutoApprove: true})
	if s.iss.Metadata().ClientIDMetadataDocumentSupported != true {
		t.Error("metadata does not advertise client_id_metadata_document_supported")
	}

	// A good document: a token for its URL, fetched once for two logins.
	id := docs.URL + "/good.json"
	for range 2 {
		a := newAuthz(id, "http://127.0.0.1:5000/callback")
		tok := wantOK(t, s.exchange(a, s.code(a)))
		if c := s.verify(tok["access_token"].(string)); c.ClientID != id {
			t.Errorf("client_id claim %q, want %q", c.ClientID, id)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("fetched %d times, want 1 (cached)", n)
	}
	// After the cache lifetime it is fetched again.
	s.advance(6 * time.Minute)
	a := newAuthz(id, "http://127.0.0.1:5000/callback")
	s.code(a)
	if n := fetches.Load(); n != 2 {
		t.Errorf("fetched %d times after the cache lifetime, want 2", n)
	}
	// A redirect URI the document does not list.
	wantPage(t, s.authorize(newAuthz(id, "http://127.0.0.1:5000/elsewhere")), http.StatusBadRequest)

	for _, tc := range []struct{ path, want string }{
		{"/other.json", "is not its URL"},
		{"/secret.json", "token_endpoint_auth_method"},
		{"/web.json", "not on loopback"},
		{"/text.json", "not application/json"},
		{"/big.json", "larger than 65536 bytes"},
		{"/missing.json", "404 Not Found"},
	} {
		page := wantPage(t, s.authorize(newAuthz(docs.URL+tc.path, "http://127.0.0.1:5000/callback")), http.StatusBadRequest)
		if !strings.Contains(page, "cannot use the client ID metadata document") || !strings.Contains(page, tc.want) {
			t.Errorf("%s: page %s, want %q", tc.path, page, tc.want)
		}
	}
	// http off loopback is no document URL: an unknown client, not fetched.
	before := fetches.Load()
	page := wantPage(t, s.authorize(newAuthz("http://app.example/client.json", "http://127.0.0.1:5000/callback")), http.StatusBadRequest)
	if !strings.Contains(page, "Unknown client") || fetches.Load() != before {
		t.Errorf("non-loopback http client_id: %s", page)
	}
}
