// Package proxy holds the programs the proxy_*.txtar scripts run: real
// MCP clients that start `agentauth proxy` as their stdio server.
//
//   - gosdkstdio: the official MCP Go SDK's client over its
//     CommandTransport (or, with -tee, the same client over IOTransport
//     with a copy of the proxy's stdout kept in a file);
//   - jsonlines: checks that every line of a file is one JSON-RPC 2.0
//     message;
//   - httpstatus: one POST with a chosen Host or Origin, prints the status;
//   - browser-jar: a $BROWSER that follows redirects with a cookie jar
//     (serve's upstream sign-in sets a cookie at /auth/start).
//
// It imports nothing of agentauth: the clients see only the command line.
package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Programs are the scripts' programs, by name.
func Programs() map[string]func() {
	return map[string]func(){
		"gosdkstdio":  goSDKStdioMain,
		"jsonlines":   jsonLinesMain,
		"httpstatus":  httpStatusMain,
		"browser-jar": browserJarMain,
	}
}

// runTimeout bounds each program's whole run.
const runTimeout = 60 * time.Second

// goSDKStdioMain starts COMMAND (agentauth proxy …) through the Go SDK's
// CommandTransport, connects, and prints one line each: the negotiated
// protocol version, the tool names, and the text of a call of -tool
// (whoami) with -args. Then, with -go FILE, it writes -ready FILE and
// calls once more when FILE exists; with -after-expiry, once more after
// the expiresAt whoami reported has passed; that call prints "again: …".
//
// Usage: gosdkstdio [-version V] [-tool NAME] [-args JSON] [-ready FILE -go FILE] [-after-expiry] [-tee FILE] COMMAND [ARG…]
func goSDKStdioMain() {
	fs := flag.NewFlagSet("gosdkstdio", flag.ExitOnError)
	version := fs.String("version", "", "MCP protocol version to ask for (default: the SDK's latest)")
	tool := fs.String("tool", "whoami", "the tool to call")
	args := fs.String("args", "{}", "the tool's arguments (JSON)")
	ready := fs.String("ready", "", "write this file after the first call")
	goFile := fs.String("go", "", "call again once this file exists")
	afterExpiry := fs.Bool("after-expiry", false, "call again once whoami's expiresAt has passed")
	tee := fs.String("tee", "", "keep a copy of the proxy's stdout in this file")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gosdkstdio [flags] COMMAND [ARG…]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	if err := goSDKStdio(ctx, fs.Args(), *version, *tool, *args, *ready, *goFile, *afterExpiry, *tee); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func goSDKStdio(ctx context.Context, command []string, version, tool, args, ready, goFile string, afterExpiry bool, tee string) error {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = os.Stderr
	var transport mcp.Transport = &mcp.CommandTransport{Command: cmd}
	if tee != "" {
		t, err := teeTransport(cmd, tee)
		if err != nil {
			return err
		}
		transport = t
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gosdkstdio", Version: "1"}, nil)
	session, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	fmt.Println("protocol:", session.InitializeResult().ProtocolVersion)
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	fmt.Println("tools:", strings.Join(names, " "))
	var arguments map[string]any
	if err := json.Unmarshal([]byte(args), &arguments); err != nil {
		return fmt.Errorf("-args: %w", err)
	}
	call := func() (string, error) {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
		if err != nil {
			return "", fmt.Errorf("tools/call %s: %w", tool, err)
		}
		var text []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text = append(text, t.Text)
			}
		}
		if res.IsError {
			return "", fmt.Errorf("tools/call %s: tool error: %s", tool, strings.Join(text, " "))
		}
		return strings.Join(text, " "), nil
	}
	first, err := call()
	if err != nil {
		return err
	}
	fmt.Println("call:", first)
	switch {
	case goFile != "":
		if err := os.WriteFile(ready, []byte("ready\n"), 0o600); err != nil {
			return err
		}
		if err := waitFile(ctx, goFile); err != nil {
			return err
		}
	case afterExpiry:
		var who struct {
			Schemes []struct {
				ExpiresAt time.Time `json:"expiresAt"`
			} `json:"schemes"`
		}
		if err := json.Unmarshal([]byte(first), &who); err != nil || len(who.Schemes) == 0 {
			return fmt.Errorf("whoami names no expiry: %s", first)
		}
		// Wait for the token's own expiry (a second's rounding past it).
		if err := sleepUntil(ctx, who.Schemes[0].ExpiresAt.Add(time.Second)); err != nil {
			return err
		}
	default:
		return nil
	}
	again, err := call()
	if err != nil {
		return err
	}
	fmt.Println("again:", again)
	return nil
}

// teeTransport starts cmd with pipes and copies its stdout into file as
// the SDK reads it.
func teeTransport(cmd *exec.Cmd, file string) (mcp.Transport, error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &mcp.IOTransport{Reader: &teeReader{r: io.TeeReader(stdout, f), closers: []io.Closer{stdout, f}}, Writer: stdin}, nil
}

type teeReader struct {
	r       io.Reader
	closers []io.Closer
}

func (t *teeReader) Read(p []byte) (int, error) { return t.r.Read(p) }

func (t *teeReader) Close() error {
	var errs []error
	for _, c := range t.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// waitFile polls until path exists.
func waitFile(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// jsonLinesMain checks FILE: every line is one JSON object with
// "jsonrpc":"2.0" and a method, a result or an error; it prints the count.
//
// Usage: jsonlines FILE
func jsonLinesMain() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: jsonlines FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	n := 0
	for sc.Scan() {
		n++
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Printf("line %d is not a JSON object: %q\n", n, sc.Text())
			os.Exit(1)
		}
		_, method := m["method"]
		_, result := m["result"]
		_, rpcErr := m["error"]
		if string(m["jsonrpc"]) != `"2.0"` || !method && !result && !rpcErr {
			fmt.Printf("line %d is not a JSON-RPC 2.0 message: %q\n", n, sc.Text())
			os.Exit(1)
		}
	}
	if n == 0 || len(data) > 0 && data[len(data)-1] != '\n' {
		fmt.Println("no complete lines")
		os.Exit(1)
	}
	fmt.Printf("%d JSON-RPC lines\n", n)
}

// httpStatusMain POSTs an initialize to URL with -host as the Host header
// and -origin as Origin (when given) and prints "status: N".
//
// Usage: httpstatus [-host HOST] [-origin ORIGIN] URL
func httpStatusMain() {
	fs := flag.NewFlagSet("httpstatus", flag.ExitOnError)
	host := fs.String("host", "", "the Host header")
	origin := fs.String("origin", "", "the Origin header")
	_ = fs.Parse(os.Args[1:])
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"httpstatus","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, fs.Arg(0), strings.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if *host != "" {
		req.Host = *host
	}
	if *origin != "" {
		req.Header.Set("Origin", *origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	resp.Body.Close()
	fmt.Println("status:", resp.StatusCode)
}

// browserJarMain GETs URL and follows redirects keeping cookies, as a
// browser does, and submits serve's confirmation page of a bound sign-in
// link (POST /auth/start) as the user clicking Continue; a non-2xx final
// status fails.
//
// Usage: browser-jar URL
func browserJarMain() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: browser-jar URL")
		os.Exit(2)
	}
	fail := func(args ...any) {
		fmt.Fprintln(os.Stderr, append([]any{"browser-jar:"}, args...)...)
		os.Exit(1)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: runTimeout}
	resp, err := hc.Get(os.Args[1])
	if err != nil {
		fail(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`<form method="post" action="/auth/start">`)) {
		form := url.Values{}
		for _, m := range hiddenInputRE.FindAllSubmatch(body, -1) {
			form.Set(html.UnescapeString(string(m[1])), html.UnescapeString(string(m[2])))
		}
		origin := resp.Request.URL.Scheme + "://" + resp.Request.URL.Host
		req, _ := http.NewRequest(http.MethodPost, origin+"/auth/start", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		if resp, err = hc.Do(req); err != nil {
			fail(err)
		}
		resp.Body.Close()
	}
	if resp.StatusCode/100 != 2 {
		fail("final status", resp.Status)
	}
}

// hiddenInputRE reads the fields of serve's confirmation page.
var hiddenInputRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
