package devserve

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/agentauth/agentauth/internal/testprog/progutil"
)

// decision is how the scripted browser answers a consent or device page:
// approve, deny, or approve as NAME ("as:NAME"). With --auto-approve no
// page is shown and the decision is not used.
type decision string

func (dc decision) form(nonce string, page []byte) url.Values {
	v := url.Values{"nonce": {nonce}, "decision": {"approve"}}
	switch {
	case dc == "deny":
		v.Set("decision", "deny")
	case strings.HasPrefix(string(dc), "as:"):
		v.Set("subject", strings.TrimPrefix(string(dc), "as:"))
	default: // keep the name the page suggests
		if m := regexp.MustCompile(`name="subject" value="([^"]*)"`).FindSubmatch(page); m != nil {
			v.Set("subject", html.UnescapeString(string(m[1])))
		}
	}
	return v
}

var (
	formRE  = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	nonceRE = regexp.MustCompile(`name="nonce" value="([^"]+)"`)
)

// browse opens u like a browser: it follows redirects and, when a page
// with a form comes back (consent or device confirmation), answers it with
// dc by posting the form, as the Approve or Deny button would. It fails
// only when the authorization server itself shows an error page: an answer
// that reached the client's loopback callback is the flow's to judge.
func (d *devclient) browse(u string, dc decision) error {
	resp, page, err := d.fetchPage(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	d.printPage(resp, page)
	action, nonce := formRE.FindSubmatch(page), nonceRE.FindSubmatch(page)
	if action != nil && nonce != nil {
		next, err := resp.Request.URL.Parse(html.UnescapeString(string(action[1])))
		if err != nil {
			return err
		}
		if resp, page, err = d.fetchPage(http.MethodPost, next.String(), dc.form(string(nonce[1]), page)); err != nil {
			return err
		}
		d.printPage(resp, page)
	}
	if resp.StatusCode != http.StatusOK && resp.Request.URL.Path != "/callback" {
		return fmt.Errorf("the browser shows %s", resp.Status)
	}
	return nil
}

// printPage prints the title of the page the browser shows.
func (d *devclient) printPage(resp *http.Response, page []byte) {
	title := "(no title)"
	if m := progutil.TitleRE.FindSubmatch(page); m != nil {
		title = html.UnescapeString(string(m[1]))
	}
	d.printf("page: %s", title)
	fmt.Fprintf(os.Stderr, "browser: %s %s: %s\n", resp.Status, resp.Request.URL.Path, title)
}

func (d *devclient) fetchPage(method, u string, form url.Values) (*http.Response, []byte, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return nil, nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, page, err
}
