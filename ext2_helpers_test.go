package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["genkey"] = genKey
	scriptCmds["mintassertion"] = mintAssertion
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
