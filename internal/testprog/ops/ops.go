// Package ops holds test programs for the testscripts: serve's operations
// surface (health, metrics, audit, JSON logs, TLS, a reverse proxy, a
// database outage): an HTTP probe (opsget) and script commands (jsonlog,
// auditlog, gencert, certfp). The database outage uses the PostgreSQL
// commands of internal/testprog/replicas (pgstart, pgstop, pgrestart).
// It is test support (see internal/testprog); only main_test.go imports it.
package ops

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/rogpeppe/go-internal/testscript"
)

// Programs are the programs testscript puts on PATH for exec, by name.
func Programs() map[string]func() {
	return map[string]func(){"opsget": opsGet, "wsclose": wsClose}
}

// Cmds are the custom script commands, by name.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"jsonlog": jsonLog, "auditlog": auditLog, "gencert": genCert, "certfp": certFP,
	}
}

// headerList is a repeatable -H flag.
type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

// opsGet GETs URL and prints "status: N", for https "cert: SHA256" (the
// served leaf certificate's fingerprint), then the body. -H adds a header
// ("Host: …" sets the Host), -ca trusts a PEM certificate. It exits 0
// whatever the status. Usage: opsget [-H 'K: V']... [-ca FILE] URL
func opsGet() {
	fs := flag.NewFlagSet("opsget", flag.ExitOnError)
	var headers headerList
	fs.Var(&headers, "H", "add the header `K: V` (repeatable)")
	ca := fs.String("ca", "", "trust the PEM certificate in `FILE`")
	fs.Parse(os.Args[1:])
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: opsget [-H 'K: V']... [-ca FILE] URL")
		os.Exit(2)
	}
	tr := &http.Transport{}
	if *ca != "" {
		b, err := os.ReadFile(*ca)
		exitOn(err)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(b)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, fs.Arg(0), nil)
	exitOn(err)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if strings.EqualFold(k, "Host") {
			req.Host = strings.TrimSpace(v)
			continue
		}
		req.Header.Add(k, strings.TrimSpace(v))
	}
	resp, err := hc.Do(req)
	exitOn(err)
	defer resp.Body.Close()
	fmt.Printf("status: %d\n", resp.StatusCode)
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		sum := sha256.Sum256(resp.TLS.PeerCertificates[0].Raw)
		fmt.Printf("cert: %s\n", hex.EncodeToString(sum[:]))
	}
	io.Copy(os.Stdout, io.LimitReader(resp.Body, 1<<20))
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "opsget:", err)
		os.Exit(1)
	}
}

// wsClose opens a WebSocket connection to URL, writes "open" and a
// newline to FILE once it is open, then reads until the server closes it
// and prints the close frame: "close: CODE REASON". Usage: wsclose FILE URL
func wsClose() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: wsclose FILE URL")
		os.Exit(2)
	}
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, os.Args[2], nil)
	exitOn(err)
	exitOn(os.WriteFile(os.Args[1], []byte("open\n"), 0o644))
	for {
		if _, _, err = c.Read(ctx); err != nil {
			break
		}
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		fmt.Fprintln(os.Stderr, "wsclose: the connection ended without a close frame:", err)
		os.Exit(1)
	}
	fmt.Printf("close: %d %s\n", int(ce.Code), ce.Reason)
}

// jsonLog checks that every line of FILE is one JSON object with time,
// level and msg (slog's JSON handler), and that there is at least one.
// Usage: jsonlog FILE
func jsonLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: jsonlog FILE")
	}
	lines := strings.Split(strings.TrimSuffix(ts.ReadFile(args[0]), "\n"), "\n")
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			ts.Fatalf("%s:%d is not JSON (%v): %s", args[0], i+1, err, l)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				ts.Fatalf("%s:%d has no %q: %s", args[0], i+1, k, l)
			}
		}
	}
	ts.Logf("%d JSON lines", len(lines))
}

// secretKeys are field names no audit event may have.
var secretKeys = []string{"token", "access_token", "refresh_token", "id_token", "code", "device_code", "user_code",
	"code_verifier", "verifier", "secret", "client_secret", "password", "assertion", "authorization"}

// auditLog checks the audit events in the JSON log FILE: each EVENT=N
// appears exactly N times, every event has audit_version 1, and none has a
// field named like a secret (token, code, verifier, secret…) or a value
// that looks like a JWT. Events not named may appear any number of times.
// Usage: auditlog FILE EVENT=N...
func auditLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: auditlog FILE EVENT=N...")
	}
	counts := map[string]int{}
	for i, l := range strings.Split(strings.TrimSuffix(ts.ReadFile(args[0]), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			ts.Fatalf("%s:%d is not JSON: %v", args[0], i+1, err)
		}
		if rec["msg"] != "audit" {
			continue
		}
		if rec["audit_version"] != 1.0 {
			ts.Fatalf("%s:%d: audit_version is %v, want 1", args[0], i+1, rec["audit_version"])
		}
		for k, v := range rec {
			for _, s := range secretKeys {
				if strings.EqualFold(k, s) {
					ts.Fatalf("%s:%d: audit event has a field %q: %s", args[0], i+1, k, l)
				}
			}
			if s, ok := v.(string); ok && strings.HasPrefix(s, "eyJ") && strings.Count(s, ".") == 2 {
				ts.Fatalf("%s:%d: audit field %s holds a JWT", args[0], i+1, k)
			}
		}
		ev, _ := rec["event"].(string)
		counts[ev]++
	}
	for _, a := range args[1:] {
		ev, n, ok := strings.Cut(a, "=")
		want, err := strconv.Atoi(n)
		if !ok || err != nil {
			ts.Fatalf("usage: auditlog FILE EVENT=N...")
		}
		if counts[ev] != want {
			ts.Fatalf("audit event %s appears %d times, want %d (all: %v)", ev, counts[ev], want, counts)
		}
	}
}

// genCert writes a new self-signed ECDSA certificate for 127.0.0.1 and
// localhost, and its key, as PEM. Usage: gencert CERTFILE KEYFILE
func genCert(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: gencert CERTFILE KEYFILE")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ts.Check(err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	ts.Check(err)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "agentauth test " + serial.String()},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	ts.Check(err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
}

// certFP sets VAR to the SHA-256 (hex) of the first certificate in the PEM
// FILE, as opsget prints it. Usage: certfp VAR FILE
func certFP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: certfp VAR FILE")
	}
	b, _ := pem.Decode([]byte(ts.ReadFile(args[1])))
	if b == nil {
		ts.Fatalf("%s holds no PEM block", args[1])
	}
	sum := sha256.Sum256(b.Bytes)
	ts.Setenv(args[0], hex.EncodeToString(sum[:]))
}
