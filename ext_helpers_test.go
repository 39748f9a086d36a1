package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"

	"github.com/go-jose/go-jose/v4"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["registermachine"] = registerMachine
}

// registerMachine registers a confidential client for the client
// credentials grant at ISSUER's registration endpoint and writes its id to
// IDFILE and, for client_secret_basic or client_secret_post, its secret to
// SECRETFILE; for private_key_jwt it generates a P-256 key, registers its
// public half (RFC 7591 §2 jwks) and writes the PEM private key there.
// Usage: registermachine ISSUER METHOD IDFILE SECRETFILE
func registerMachine(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: registermachine ISSUER METHOD IDFILE SECRETFILE")
	}
	meta := map[string]any{"client_name": "script machine", "grant_types": []string{"client_credentials"}, "token_endpoint_auth_method": args[1]}
	var keyPEM []byte
	if args[1] == "private_key_jwt" {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		ts.Check(err)
		der, err := x509.MarshalPKCS8PrivateKey(key)
		ts.Check(err)
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		meta["jwks"] = jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, Algorithm: "ES256", Use: "sig"}}}
	}
	body, err := json.Marshal(meta)
	ts.Check(err)
	resp, err := http.Post(args[0]+"/register", "application/json", bytes.NewReader(body))
	ts.Check(err)
	defer resp.Body.Close()
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Error        string `json:"error_description"`
	}
	ts.Check(json.NewDecoder(resp.Body).Decode(&reg))
	if resp.StatusCode != http.StatusCreated {
		ts.Fatalf("registration answered %s: %s", resp.Status, reg.Error)
	}
	secret := []byte(reg.ClientSecret + "\n")
	if keyPEM != nil {
		secret = keyPEM
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(reg.ClientID+"\n"), 0o600))
	ts.Check(os.WriteFile(ts.MkAbs(args[3]), secret, 0o600))
}
