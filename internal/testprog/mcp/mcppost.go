package mcp

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
)

// The mcp_*.txtar scripts' helpers: mcppost, one POST to an MCP endpoint
// with the headers the script chooses, and cimddoc, a server of client ID
// metadata documents.
func init() {
	programs["mcppost"] = mcpPostMain
	programs["cimddoc"] = cimdDocMain
}

// cimdDocMain serves client ID metadata documents on 127.0.0.1:0 until
// killed: /client.json names its own URL as client_id, with agentauth's
// loopback redirect URIs; /other.json names another client_id. It writes
// its HOST:PORT to ADDR_FILE and, to CLIENT_FILE, the client as devclient
// -client-file reads it (a public client whose id is the /client.json URL).
// Usage: cimddoc ADDR_FILE CLIENT_FILE
func cimdDocMain() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: cimddoc ADDR_FILE CLIENT_FILE")
		os.Exit(2)
	}
	ln := progutil.ListenLoopback("cimddoc")
	base := "http://" + ln.Addr().String()
	doc := func(id string) []byte {
		b, _ := json.Marshal(map[string]any{"client_id": id, "client_name": "cimddoc test client",
			"redirect_uris": []string{"http://127.0.0.1/callback", "http://localhost/callback"}, "token_endpoint_auth_method": "none",
			"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}})
		return b
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /client.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(os.Stderr, "cimddoc: GET /client.json")
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc(base + "/client.json"))
	})
	mux.HandleFunc("GET /other.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc(base + "/client.json"))
	})
	client, _ := json.Marshal(map[string]string{"client_id": base + "/client.json", "token_endpoint_auth_method": "none"})
	if err := os.WriteFile(os.Args[2], client, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "cimddoc:", err)
		os.Exit(1)
	}
	progutil.ServeUntilInterrupt("cimddoc", ln, os.Args[1], mux)
}

// headerFlags collects repeated -H "Name: value" flags.
type headerFlags [][2]string

func (h *headerFlags) String() string { return fmt.Sprint(*h) }

func (h *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || name == "" {
		return fmt.Errorf("%q is not Name: value", v)
	}
	*h = append(*h, [2]string{name, strings.TrimSpace(value)})
	return nil
}

// mcpPostMain posts BODY to URL as application/json and prints the status,
// the WWW-Authenticate, Allow and Content-Type headers and the body.
// Usage: mcppost [-token FILE] [-method METHOD] [-H 'Name: value']... URL BODY
func mcpPostMain() {
	fs := flag.NewFlagSet("mcppost", flag.ExitOnError)
	from := fs.String("token", "", "send the token in `FILE` as Authorization: Bearer")
	method := fs.String("method", http.MethodPost, "the HTTP `METHOD`")
	var headers headerFlags
	fs.Var(&headers, "H", "add the request header `Name: value` (repeatable)")
	fs.Parse(os.Args[1:])
	if fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: mcppost [-token FILE] [-method METHOD] [-H 'Name: value']... URL BODY")
		os.Exit(2)
	}
	if err := mcpPost(*from, *method, headers, fs.Arg(0), fs.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, "mcppost:", err)
		os.Exit(1)
	}
}

func mcpPost(tokenFile, method string, headers headerFlags, target, body string) error {
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	var tok string
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return err
		}
		tok = strings.TrimSpace(string(b))
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for _, h := range headers {
		if strings.EqualFold(h[0], "Host") {
			req.Host = h[1]
			continue
		}
		req.Header.Add(h[0], h[1])
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return progutil.PrintAnswer(os.Stdout, resp, tok)
}
