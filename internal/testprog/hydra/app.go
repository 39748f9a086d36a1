package hydra

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// loginApp is Hydra's login and consent app (URLS_LOGIN, URLS_CONSENT):
// it answers each challenge at once through Hydra's admin API and sends
// the browser on to the redirect_to Hydra gives back.
type loginApp struct {
	dir string
	hc  *http.Client

	mu    sync.Mutex
	admin string
}

func (a *loginApp) setAdmin(addr string) {
	a.mu.Lock()
	a.admin = addr
	a.mu.Unlock()
}

// user is who signs in (DIR/user), "" before Hydra is ready or when the
// file is missing.
func (a *loginApp) user() string {
	b, _ := os.ReadFile(filepath.Join(a.dir, "user"))
	return strings.TrimSpace(string(b))
}

func (a *loginApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var to string
	var err error
	switch r.URL.Path {
	case "/login":
		to, err = a.login(q.Get("login_challenge"))
	case "/consent":
		to, err = a.consent(q.Get("consent_challenge"))
	default:
		http.NotFound(w, r)
		return
	}
	a.log("%s %v", r.URL.Path, err)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, to, http.StatusFound)
}

// login accepts the login as DIR/user, or rejects it with access_denied
// when that is "!deny".
func (a *loginApp) login(challenge string) (string, error) {
	user := a.user()
	ch := "?login_challenge=" + url.QueryEscape(challenge)
	switch user {
	case "":
		return "", errors.New("no user: write one to " + filepath.Join(a.dir, "user"))
	case "!deny":
		return a.put("/admin/oauth2/auth/requests/login/reject"+ch, map[string]any{
			"error": "access_denied", "error_description": "The user declined to sign in."})
	}
	return a.put("/admin/oauth2/auth/requests/login/accept"+ch, map[string]any{"subject": user})
}

// consent grants what the client asked for, with the user's verified
// e-mail address in the ID token.
func (a *loginApp) consent(challenge string) (string, error) {
	ch := "?consent_challenge=" + url.QueryEscape(challenge)
	var req struct {
		Subject        string   `json:"subject"`
		RequestedScope []string `json:"requested_scope"`
		Audience       []string `json:"requested_access_token_audience"`
	}
	if err := a.call(http.MethodGet, "/admin/oauth2/auth/requests/consent"+ch, nil, &req); err != nil {
		return "", err
	}
	return a.put("/admin/oauth2/auth/requests/consent/accept"+ch, map[string]any{
		"grant_scope": req.RequestedScope, "grant_access_token_audience": req.Audience,
		"session": map[string]any{"id_token": map[string]any{"email": req.Subject + "@example.com", "email_verified": true}}})
}

// put sends body to Hydra's admin API and returns its redirect_to.
func (a *loginApp) put(path string, body any) (string, error) {
	var out struct {
		RedirectTo string `json:"redirect_to"`
	}
	if err := a.call(http.MethodPut, path, body, &out); err != nil {
		return "", err
	}
	if out.RedirectTo == "" {
		return "", fmt.Errorf("%s: no redirect_to", path)
	}
	return out.RedirectTo, nil
}

func (a *loginApp) call(method, path string, body, out any) error {
	a.mu.Lock()
	admin := a.admin
	a.mu.Unlock()
	if admin == "" {
		return errors.New("hydra is not ready")
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+admin+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	return json.Unmarshal(b, out)
}

// log appends a line to DIR/app.log.
func (a *loginApp) log(format string, args ...any) {
	f, err := os.OpenFile(filepath.Join(a.dir, "app.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

// clientMain is hydraclient. Usage: hydraclient ADMINFILE JSONFILE
func clientMain() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: hydraclient ADMINFILE JSONFILE")
		os.Exit(2)
	}
	admin, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("hydraclient", err)
	}
	body, err := os.ReadFile(os.Args[2])
	if err != nil {
		fail("hydraclient", err)
	}
	resp, err := http.Post("http://"+strings.TrimSpace(string(admin))+"/admin/clients", "application/json", bytes.NewReader(body))
	if err != nil {
		fail("hydraclient", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		fail("hydraclient", fmt.Errorf("POST /admin/clients: %s: %s", resp.Status, b))
	}
	var c struct {
		ClientID string `json:"client_id"`
	}
	_ = json.Unmarshal(b, &c)
	fmt.Println("created", c.ClientID)
}
