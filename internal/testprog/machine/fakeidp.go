package machine

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	cmds["genkey"] = genKey
	cmds["mintassertion"] = mintAssertion
	programs["fakeidp"] = fakeIdPMain
}

// genKey writes a new P-256 private key to PRIV and its public half to
// PUB, both PEM. Usage: genkey PRIV PUB
func genKey(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: genkey PRIV PUB")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ts.Check(err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	ts.Check(err)
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644))
}

// mintAssertion signs, with the P-256 key in PRIV, a JWT as a CI platform or an
// IdP would: iss ISS, aud AUD, sub SUB, a random jti, and exp LIFETIME
// (default 5m) from now; it writes it to OUT.
// Usage: mintassertion PRIV ISS AUD SUB OUT [LIFETIME]
func mintAssertion(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 5 || len(args) > 6 {
		ts.Fatalf("usage: mintassertion PRIV ISS AUD SUB OUT [LIFETIME]")
	}
	lifetime := 5 * time.Minute
	if len(args) == 6 {
		var err error
		lifetime, err = time.ParseDuration(args[5])
		ts.Check(err)
	}
	block, _ := pem.Decode([]byte(ts.ReadFile(args[0])))
	if block == nil {
		ts.Fatalf("mintassertion: no PEM block in %s", args[0])
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	ts.Check(err)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	ts.Check(err)
	now := time.Now()
	s, err := jwt.Signed(signer).Claims(jwt.Claims{
		Issuer: args[1], Audience: jwt.Audience{args[2]}, Subject: args[3], ID: rand.Text(),
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(lifetime)),
	}).Serialize()
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[4]), []byte(s+"\n"), 0o600))
}

// fakeIdPMain is an enterprise IdP's token endpoint for MCP's
// enterprise-managed authorization: POST /token takes a token exchange
// (RFC 8693) of an ID token it signed (iss -iss, with the key in PRIV) and
// answers an ID-JAG (typ oauth-id-jag+jwt) for the requested audience and
// resource, with the user's sub and client_id -client-id, signed with the
// same key. It listens on 127.0.0.1:0, writes its address to ADDRFILE,
// and exits 0 on kill -INT.
//
//	fakeidp -iss ISS -client-id ID PRIV ADDRFILE
func fakeIdPMain() {
	fs := flag.NewFlagSet("fakeidp", flag.ExitOnError)
	iss := fs.String("iss", "", "the IdP's issuer")
	clientID := fs.String("client-id", "", "the client_id of the ID-JAGs")
	_ = fs.Parse(os.Args[1:])
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "fakeidp:", err)
		os.Exit(1)
	}
	if *iss == "" || *clientID == "" || fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: fakeidp -iss ISS -client-id ID PRIV ADDRFILE")
		os.Exit(2)
	}
	raw, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fail(err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		fail(fmt.Errorf("no PEM block in %s", fs.Arg(0)))
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		fail(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("oauth-id-jag+jwt"))
	if err != nil {
		fail(err)
	}
	refuse := func(w http.ResponseWriter, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": desc})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" ||
			r.FormValue("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token" ||
			r.FormValue("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag" {
			refuse(w, "want a token exchange of an ID token for an ID-JAG")
			return
		}
		tok, err := jwt.ParseSigned(r.FormValue("subject_token"), []jose.SignatureAlgorithm{jose.ES256})
		var idt jwt.Claims
		if err != nil || tok.Claims(key.(crypto.Signer).Public(), &idt) != nil || idt.Issuer != *iss {
			refuse(w, "the ID token is not one of this IdP's")
			return
		}
		now := time.Now()
		jag, err := jwt.Signed(signer).Claims(jwt.Claims{
			Issuer: *iss, Subject: idt.Subject, Audience: jwt.Audience{r.FormValue("audience")}, ID: rand.Text(),
			IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(5 * time.Minute)),
		}).Claims(map[string]any{"client_id": *clientID, "resource": r.FormValue("resource")}).Serialize()
		if err != nil {
			refuse(w, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": jag, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
			"token_type": "N_A", "expires_in": 300})
	})
	progutil.ServeUntilInterrupt("fakeidp", progutil.ListenLoopback("fakeidp"), fs.Arg(1), mux)
}
