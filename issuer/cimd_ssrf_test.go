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

// TestCIMDDialControlSpecialPurpose: the dial guard refuses the IANA
// special-purpose ranges a metadata fetch must never reach (RFC 6890),
// and a NAT64 address (64:ff9b::/96) by the IPv4 address it carries,
// while public addresses, in either family, pass.
func TestCIMDDialControlSpecialPurpose(t *testing.T) {
	control := cimdDialControl(false)
	for addr, want := range map[string]string{
		"100.64.0.1:443":           "the shared (carrier-grade NAT) address 100.64.0.1",
		"100.127.255.254:443":      "shared (carrier-grade NAT)",
		"198.18.0.1:443":           "the benchmarking address 198.18.0.1",
		"198.19.255.1:443":         "benchmarking",
		"0.1.2.3:443":              "the this-network address 0.1.2.3",
		"192.0.0.8:443":            "the IETF protocol assignment address",
		"192.0.2.1:443":            "documentation",
		"240.1.2.3:443":            "the reserved address 240.1.2.3",
		"255.255.255.255:443":      "the broadcast address",
		"[fd00::1]:443":            "the unique local address fd00::1",
		"[fe80::1%lo]:443":         "the link-local address fe80::1",
		"[::1]:443":                "the loopback address ::1",
		"[::]:443":                 "the unspecified address",
		"[ff02::1]:443":            "multicast",
		"[2001:db8::1]:443":        "documentation",
		"[64:ff9b::a9fe:a9fe]:443": "the NAT64 address 64:ff9b::a9fe:a9fe, which carries the link-local address 169.254.169.254",
		"[64:ff9b::7f00:1]:443":    "carries the loopback address 127.0.0.1",
		"[64:ff9b::6440:1]:443":    "carries the shared (carrier-grade NAT) address 100.64.0.1",
		"[64:ff9b:1::a00:1]:443":   "the local-use NAT64 address",
		"[::ffff:100.64.0.1]:443":  "shared (carrier-grade NAT)",
		"[2002:a00:1::1]:443":      "6to4",
		"[::ffff:198.18.0.1]:443":  "benchmarking",
	} {
		err := control("tcp", addr, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", addr, err, want)
		}
	}
	for _, addr := range []string{"93.184.215.14:443", "100.128.0.1:443", "198.20.0.1:443", "[2606:4700::1111]:443", "[64:ff9b::5db8:d70e]:443"} {
		if err := control("tcp", addr, nil); err != nil {
			t.Errorf("%s: %v, want allowed", addr, err)
		}
	}
}
