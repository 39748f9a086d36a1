package issuer_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentauth/agentauth/issuer"
)

// pinned parses documents as a pinned file would hold them.
func pinned(t *testing.T, docs ...string) [][]byte {
	t.Helper()
	out, err := issuer.ParseCIMDDocuments([]byte("[" + strings.Join(docs, ",") + "]"))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCIMDPinnedDocuments: a pinned document stands for its client_id
// without a fetch, in both modes, however unreachable its host; in pinned
// mode any other document URL is refused with the fix named, unfetched.
func TestCIMDPinnedDocuments(t *testing.T) {
	var fetches atomic.Int32
	docs := docServer(t, &fetches, map[string]func(string) (string, string){
		"/pinned.json":   func(self string) (string, string) { return "application/json", cimdDoc(self, nil) },
		"/unpinned.json": func(self string) (string, string) { return "application/json", cimdDoc(self, nil) },
	})
	// A host that does not resolve: only the pin can make it a client.
	const offline = "https://client.invalid/oauth/client.json"
	for _, mode := range []string{"", issuer.CIMDFetch, issuer.CIMDPinned} {
		fetches.Store(0)
		s := start(t, issuer.Options{AutoApprove: true, CIMD: issuer.CIMDOptions{Mode: mode,
			Pinned: pinned(t, cimdDoc(docs.URL+"/pinned.json", nil), cimdDoc(offline, map[string]any{"client_name": "offline client"}))}})
		if !s.iss.Metadata().ClientIDMetadataDocumentSupported {
			t.Errorf("mode %q: metadata does not advertise client_id_metadata_document_supported", mode)
		}
		for _, id := range []string{docs.URL + "/pinned.json", offline} {
			a := newAuthz(id, "http://127.0.0.1:3118/callback")
			tok := wantOK(t, s.exchange(a, s.code(a)))
			if c := s.verify(tok["access_token"].(string)); c.ClientID != id {
				t.Errorf("mode %q: client_id claim %q, want %q", mode, c.ClientID, id)
			}
		}
		if n := fetches.Load(); n != 0 {
			t.Errorf("mode %q: %d fetches of pinned documents, want none", mode, n)
		}
		unpinned := newAuthz(docs.URL+"/unpinned.json", "http://127.0.0.1:3118/callback")
		if mode != issuer.CIMDPinned {
			s.code(unpinned)
			continue
		}
		page := wantPage(t, s.authorize(unpinned), http.StatusBadRequest)
		if !strings.Contains(page, "uses only the client ID metadata documents pinned") || !strings.Contains(page, "--cimd-document") {
			t.Errorf("pinned mode, unpinned document: page %s", page)
		}
		if n := fetches.Load(); n != 0 {
			t.Errorf("pinned mode fetched %d documents, want none", n)
		}
	}
}

// TestCIMDHostAllowList: with Hosts, only documents on those hosts are
// fetched; another host's is refused before any connection, naming the
// flag that would allow it.
func TestCIMDHostAllowList(t *testing.T) {
	var fetches atomic.Int32
	docs := docServer(t, &fetches, map[string]func(string) (string, string){
		"/c.json": func(self string) (string, string) { return "application/json", cimdDoc(self, nil) },
	})
	host := strings.TrimPrefix(docs.URL, "http://")
	refused := start(t, issuer.Options{AutoApprove: true, CIMD: issuer.CIMDOptions{Hosts: []string{"claude.ai", "chatgpt.com"}}})
	page := wantPage(t, refused.authorize(newAuthz(docs.URL+"/c.json", "http://127.0.0.1:3118/callback")), http.StatusBadRequest)
	if !strings.Contains(page, "only from claude.ai, chatgpt.com") || !strings.Contains(page, "--cimd-host "+host) {
		t.Errorf("host off the allow-list: page %s", page)
	}
	if n := fetches.Load(); n != 0 {
		t.Errorf("fetched %d times from a host off the allow-list", n)
	}
	allowed := start(t, issuer.Options{AutoApprove: true, CIMD: issuer.CIMDOptions{Hosts: []string{strings.ToUpper(host)}}})
	allowed.code(newAuthz(docs.URL+"/c.json", "http://127.0.0.1:3118/callback"))
	if n := fetches.Load(); n != 1 {
		t.Errorf("fetched %d times from an allowed host, want 1", n)
	}
}

// TestCIMDOff: off, the metadata no longer advertises documents and a
// document URL is an unknown client, never fetched, even when pinned.
func TestCIMDOff(t *testing.T) {
	var fetches atomic.Int32
	docs := docServer(t, &fetches, map[string]func(string) (string, string){
		"/c.json": func(self string) (string, string) { return "application/json", cimdDoc(self, nil) },
	})
	s := start(t, issuer.Options{AutoApprove: true, CIMD: issuer.CIMDOptions{Mode: issuer.CIMDOff, Pinned: pinned(t, cimdDoc(docs.URL+"/c.json", nil))}})
	if s.iss.Metadata().ClientIDMetadataDocumentSupported {
		t.Error("metadata advertises client_id_metadata_document_supported with documents off")
	}
	if body := string(s.get("/.well-known/oauth-authorization-server").body); strings.Contains(body, "client_id_metadata_document_supported") {
		t.Errorf("metadata document names client_id_metadata_document_supported: %s", body)
	}
	a := newAuthz(docs.URL+"/c.json", "http://127.0.0.1:3118/callback")
	if page := wantPage(t, s.authorize(a), http.StatusBadRequest); !strings.Contains(page, "Unknown client") {
		t.Errorf("document URL with documents off: page %s", page)
	}
	r := s.post("/token", url.Values{"grant_type": {"authorization_code"}, "client_id": {docs.URL + "/c.json"}, "code": {"x"}, "code_verifier": {a.verifier}})
	wantError(t, r, http.StatusUnauthorized, "invalid_client")
	if n := fetches.Load(); n != 0 {
		t.Errorf("fetched %d times with documents off", n)
	}
}

// TestCIMDOptionsRefused: a pinned document is held to a fetched one's
// rules, and the options are checked at New.
func TestCIMDOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts issuer.CIMDOptions
		want string
	}{
		{"web redirect", issuer.CIMDOptions{Pinned: pinned(t, cimdDoc("https://app.example/c.json", map[string]any{"redirect_uris": []string{"https://app.example/cb"}}))}, "not on loopback"},
		{"secret", issuer.CIMDOptions{Pinned: pinned(t, cimdDoc("https://app.example/c.json", map[string]any{"token_endpoint_auth_method": "client_secret_basic"}))}, "want none"},
		{"not a URL", issuer.CIMDOptions{Pinned: pinned(t, cimdDoc("my-client", nil))}, "is not a document URL"},
		{"twice", issuer.CIMDOptions{Pinned: pinned(t, cimdDoc("https://app.example/c.json", nil), cimdDoc("https://app.example/c.json", nil))}, "two client ID metadata documents"},
		{"pinned without pins", issuer.CIMDOptions{Mode: issuer.CIMDPinned}, "none is pinned"},
		{"mode", issuer.CIMDOptions{Mode: "sometimes"}, `mode "sometimes"`},
		{"host", issuer.CIMDOptions{Hosts: []string{"https://claude.ai"}}, "want a host name"},
	} {
		_, err := issuer.New(issuer.Options{Issuer: "http://127.0.0.1:1", CIMD: tc.opts})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New error %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{`} {
		if _, err := issuer.ParseCIMDDocuments([]byte(bad)); err == nil {
			t.Errorf("ParseCIMDDocuments(%q): no error", bad)
		}
	}
}

// TestShippedCIMDPins: the example pins under deploy/cimd are accepted as
// they are, and each lets its client log in from the loopback redirect
// its host sends.
func TestShippedCIMDPins(t *testing.T) {
	files, _ := filepath.Glob("../deploy/cimd/*.json")
	if len(files) < 3 {
		t.Fatalf("deploy/cimd holds %d documents", len(files))
	}
	var all [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := issuer.ParseCIMDDocuments(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, docs...)
	}
	s := start(t, issuer.Options{AutoApprove: true, CIMD: issuer.CIMDOptions{Mode: issuer.CIMDPinned, Pinned: all}})
	for _, id := range []string{"https://claude.ai/oauth/claude-code-client-metadata", "https://chatgpt.com/oauth/codex/client.json",
		"https://github.com/copilot/cli/client-metadata.json"} {
		a := newAuthz(id, "http://127.0.0.1:40123/callback")
		wantOK(t, s.exchange(a, s.code(a)))
	}
}
