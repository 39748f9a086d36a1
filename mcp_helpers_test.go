package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// The mcp_*.txtar scripts' helper: mcppost, one POST to an MCP endpoint
// with the headers the script chooses.
func init() {
	scriptPrograms["mcppost"] = mcpPostMain
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
// Usage: mcppost [-token FILE] [-H 'Name: value']... URL BODY
func mcpPostMain() {
	fs := flag.NewFlagSet("mcppost", flag.ExitOnError)
	from := fs.String("token", "", "send the token in `FILE` as Authorization: Bearer")
	var headers headerFlags
	fs.Var(&headers, "H", "add the request header `Name: value` (repeatable)")
	fs.Parse(os.Args[1:])
	if fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: mcppost [-token FILE] [-H 'Name: value']... URL BODY")
		os.Exit(2)
	}
	if err := mcpPost(*from, headers, fs.Arg(0), fs.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, "mcppost:", err)
		os.Exit(1)
	}
}

func mcpPost(tokenFile string, headers headerFlags, target, body string) error {
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
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
	got, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	fmt.Printf("status: %d\n", resp.StatusCode)
	for _, h := range []string{"WWW-Authenticate", "Allow", "Content-Type"} {
		for _, v := range resp.Header.Values(h) {
			fmt.Printf("%s: %s\n", h, v)
		}
	}
	if tok != "" && bytes.Contains(got, []byte(tok)) {
		return errors.New("the answer echoes the token")
	}
	fmt.Printf("body: %s\n", bytes.TrimSpace(got))
	return nil
}
