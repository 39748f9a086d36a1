package devserve

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// The issuer_*.txtar scripts' helper: issuerprobe, a hostile client of
// the embedded issuer that prints what it is answered (never a code or a
// token).
func init() {
	programs["issuerprobe"] = issuerProbeMain
}

const issuerProbeUsage = `usage: issuerprobe COMMAND [flags] ADDR|URL
  register [-redirect-uri URI] [-n N] ADDR   register N public clients; stop at the first refusal
  authorize [-client-file F] [-redirect-uri URI] [-state-bytes N] ADDR
                                             one authorization request; print where it leads
  headers [-method M] [-origin O] URL        print the status and Access-Control-Allow-Origin
  devicecodes [-wrong N] ADDR                start a device authorization, type N wrong user codes
                                             on the device page, then the right one`

func issuerProbeMain() {
	cmds := map[string]func(*flag.FlagSet, []string) error{
		"register": probeRegister, "authorize": probeAuthorize, "headers": probeHeaders, "devicecodes": probeDeviceCodes,
	}
	if len(os.Args) < 2 || cmds[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, issuerProbeUsage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ContinueOnError)
	if err := cmds[os.Args[1]](fs, os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "issuerprobe:", err)
		os.Exit(1)
	}
}

// probeClient never follows redirects: a redirect's target is printed,
// not visited.
var probeClient = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// parseOne parses the flags and the one positional argument.
func parseOne(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		return "", fmt.Errorf("%s wants one ADDR or URL", fs.Name())
	}
	return fs.Arg(0), nil
}

func probeRegister(fs *flag.FlagSet, args []string) error {
	redirect := fs.String("redirect-uri", "http://127.0.0.1/callback", "the redirect URI to register")
	n := fs.Int("n", 1, "how many clients to register")
	out := fs.String("out", "", "write the last client_id to `FILE`")
	from := fs.String("from", "", "connect from the loopback `IP` (127.0.0.2…: another source)")
	addr, err := parseOne(fs, args)
	if err != nil {
		return err
	}
	hc := probeClient
	if *from != "" {
		hc = &http.Client{Timeout: probeClient.Timeout, Transport: &http.Transport{
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(*from)}}).DialContext}}
	}
	body, _ := json.Marshal(map[string]any{"redirect_uris": []string{*redirect}, "token_endpoint_auth_method": "none", "client_name": "issuerprobe"})
	for k := range *n {
		resp, err := hc.Post("http://"+addr+"/register", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		var answer struct {
			ClientID    string `json:"client_id"`
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("registration %d: %s: %w", k+1, resp.Status, err)
		}
		if resp.StatusCode != http.StatusCreated {
			fmt.Printf("registered: %d\n", k)
			fmt.Printf("refused: %d %s: %s\n", resp.StatusCode, answer.Error, answer.Description)
			if ra := resp.Header.Get("Retry-After"); ra != "" {
				fmt.Printf("retry-after: %s\n", ra)
			}
			return nil
		}
		if *out != "" {
			if err := os.WriteFile(*out, []byte(answer.ClientID+"\n"), 0o600); err != nil {
				return err
			}
		}
	}
	fmt.Printf("registered: %d\n", *n)
	return nil
}

var (
	probeTitleRE   = regexp.MustCompile(`<h1>([^<]*)</h1>`)
	probeMessageRE = regexp.MustCompile(`<p(?: class="error")?>([^<]*)</p>`)
)

// printPage prints an HTML answer's status, title and first message.
func printPage(resp *http.Response) {
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	fmt.Printf("status: %d\n", resp.StatusCode)
	if m := probeTitleRE.FindSubmatch(page); m != nil {
		fmt.Printf("page: %s\n", html.UnescapeString(string(m[1])))
	}
	if m := probeMessageRE.FindSubmatch(page); m != nil {
		fmt.Printf("message: %s\n", html.UnescapeString(string(m[1])))
	}
}

func probeAuthorize(fs *flag.FlagSet, args []string) error {
	clientFile := fs.String("client-file", "", "read the client_id from `FILE` (issuerprobe register -out) instead of agentauth-cli")
	redirect := fs.String("redirect-uri", "http://127.0.0.1:49152/callback", "redirect_uri")
	stateBytes := fs.Int("state-bytes", 16, "length of the state")
	addr, err := parseOne(fs, args)
	if err != nil {
		return err
	}
	clientID := "agentauth-cli"
	if *clientFile != "" {
		b, err := os.ReadFile(*clientFile)
		if err != nil {
			return err
		}
		clientID = strings.TrimSpace(string(b))
	}
	state := strings.Repeat("s", *stateBytes)
	q := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {*redirect}, "state": {state},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"},
	}
	resp, err := probeClient.Get("http://" + addr + "/authorize?" + q.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		printPage(resp)
		return nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return err
	}
	fmt.Printf("status: %d\n", resp.StatusCode)
	fmt.Printf("redirect: %s://%s%s\n", u.Scheme, u.Host, u.Path)
	back := u.Query()
	fmt.Printf("code: %t\n", back.Get("code") != "")
	fmt.Printf("state echoed: %t\n", back.Get("state") == state)
	if back.Has("error") {
		fmt.Printf("error: %s: %s\n", back.Get("error"), back.Get("error_description"))
	}
	return nil
}

func probeHeaders(fs *flag.FlagSet, args []string) error {
	method := fs.String("method", http.MethodGet, "HTTP method")
	origin := fs.String("origin", "http://evil.example", "Origin header")
	target, err := parseOne(fs, args)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(*method, target, strings.NewReader("grant_type=authorization_code&code=x&code_verifier=x&client_id=agentauth-cli"))
	if err != nil {
		return err
	}
	req.Header.Set("Origin", *origin)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if *method == http.MethodOptions {
		req.Header.Set("Access-Control-Request-Method", "POST")
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	acao := resp.Header.Get("Access-Control-Allow-Origin")
	if acao == "" {
		acao = "(none)"
	}
	fmt.Printf("status: %d\n", resp.StatusCode)
	fmt.Printf("Access-Control-Allow-Origin: %s\n", acao)
	return nil
}

// probeDeviceCodes types wrong user codes as fast as it can, counts the
// answers by status, then types the right code.
func probeDeviceCodes(fs *flag.FlagSet, args []string) error {
	wrong := fs.Int("wrong", 100, "how many wrong codes to type")
	addr, err := parseOne(fs, args)
	if err != nil {
		return err
	}
	resp, err := probeClient.PostForm("http://"+addr+"/device_authorization", url.Values{"client_id": {"agentauth-cli"}})
	if err != nil {
		return err
	}
	var da struct {
		UserCode string `json:"user_code"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&da)
	resp.Body.Close()
	if err != nil || da.UserCode == "" {
		return fmt.Errorf("device authorization: %s %v", resp.Status, err)
	}
	guess := "BBBB-BBBB"
	if guess == da.UserCode {
		guess = "CCCC-CCCC"
	}
	counts := map[int]int{}
	var order []int
	for range *wrong {
		resp, err := probeClient.Get("http://" + addr + "/device?user_code=" + guess)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if counts[resp.StatusCode] == 0 {
			order = append(order, resp.StatusCode)
		}
		counts[resp.StatusCode]++
	}
	for _, status := range order {
		fmt.Printf("wrong codes answered %d: %d\n", status, counts[status])
	}
	resp, err = probeClient.Get("http://" + addr + "/device?" + url.Values{"user_code": {da.UserCode}}.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	fmt.Println("right code:")
	printPage(resp)
	return nil
}
