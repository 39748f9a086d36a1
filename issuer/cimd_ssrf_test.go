package issuer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCIMDFetchRefusesInternalAddresses: a client ID metadata document is
// not fetched from a private, link-local, multicast or unspecified
// address, nor from loopback unless the issuer is on loopback; the check
// is on the address dialled, so a name (localhost) resolving to loopback
// is refused like the literal address.
func TestCIMDFetchRefusesInternalAddresses(t *testing.T) {
	doc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"client_id": "http://` + r.Host + r.URL.Path + `", "redirect_uris": ["http://127.0.0.1/callback"]}`))
	}))
	t.Cleanup(doc.Close)
	port := doc.URL[strings.LastIndex(doc.URL, ":"):]
	newIssuer := func(iss string) *Issuer {
		i, err := New(Options{Issuer: iss})
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	ctx := context.Background()

	// The issuer on loopback (a dev setup, tests) fetches loopback documents.
	if _, err := newIssuer("http://127.0.0.1:1").cimdClient(ctx, doc.URL+"/c.json"); err != nil {
		t.Errorf("loopback issuer, loopback document: %v", err)
	}

	public := newIssuer("https://as.example")
	for id, want := range map[string]string{
		doc.URL + "/c.json":                     "resolves to the loopback address 127.0.0.1",
		"http://localhost" + port + "/c.json":   "the loopback address",
		"https://10.1.2.3/c.json":               "resolves to the private address 10.1.2.3",
		"https://192.168.0.10/c.json":           "the private address",
		"https://169.254.169.254/latest/c.json": "resolves to the link-local address 169.254.169.254",
		"https://239.1.2.3/c.json":              "the multicast address 239.1.2.3",
		"https://0.0.0.0/c.json":                "resolves to the unspecified address 0.0.0.0",
		"https://[::ffff:10.0.0.1]:8443/c.json": "the private address",
	} {
		_, err := public.cimdClient(ctx, id)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "public https URL") {
			t.Errorf("%s: err = %v, want %q and the fix", id, err, want)
		}
	}
}
