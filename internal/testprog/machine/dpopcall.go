package machine

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"

	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"

	"github.com/go-jose/go-jose/v4"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	cmds["registermachine"] = registerMachine
	programs["dpopcall"] = dpopCallMain
}

// dpopCallMain POSTs a JSON-RPC ping to URL with the DPoP-bound token of
// the file store's one DPoP credential, as agentauth would or as a thief
// would, and prints each answer's status and WWW-Authenticate.
//
//	dpopcall [-htu URL] [-twice] [-bearer] [-method M] URL
func dpopCallMain() {
	fs := flag.NewFlagSet("dpopcall", flag.ExitOnError)
	htu := fs.String("htu", "", "the proof's htu (default URL)")
	twice := fs.Bool("twice", false, "send the same proof twice")
	bearer := fs.Bool("bearer", false, "send the token as Bearer without a proof")
	method := fs.String("method", http.MethodPost, "the proof's htm")
	_ = fs.Parse(os.Args[1:])
	target := fs.Arg(0)
	st, err := store.Open(store.KindFile, os.Getenv(store.EnvConfigDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "dpopcall:", err)
		os.Exit(1)
	}
	creds, _ := st.List(context.Background())
	var c *store.Credential
	for _, cr := range creds {
		if cr.DPoPKey != "" {
			c = cr
		}
	}
	if c == nil {
		fmt.Fprintln(os.Stderr, "dpopcall: no DPoP-bound credential in the store")
		os.Exit(1)
	}
	key, err := wire.ParseDPoPKey(c.DPoPKey)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dpopcall:", err)
		os.Exit(1)
	}
	proof, err := key.Proof(*method, cmp.Or(*htu, target), c.AccessToken, "", time.Now())
	if err != nil {
		fmt.Fprintln(os.Stderr, "dpopcall:", err)
		os.Exit(1)
	}
	n := 1
	if *twice {
		n = 2
	}
	for range n {
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if *bearer {
			req.Header.Set("Authorization", "Bearer "+c.AccessToken)
		} else {
			req.Header.Set("Authorization", "DPoP "+c.AccessToken)
			req.Header.Set("DPoP", proof)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dpopcall:", err)
			os.Exit(1)
		}
		resp.Body.Close()
		fmt.Printf("status: %d\nwww-authenticate: %s\n", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
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
