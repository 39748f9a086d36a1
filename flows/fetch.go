package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultFetchTimeout bounds each HTTP exchange flows makes, body included.
const DefaultFetchTimeout = 10 * time.Second

// MaxBodySize bounds each response body flows reads (1 MiB).
const MaxBodySize = 1 << 20

// FetchOption tunes the discovery fetches.
type FetchOption func(*fetchOptions)

type fetchOptions struct {
	timeout time.Duration
}

// WithFetchTimeout replaces DefaultFetchTimeout for each fetch.
func WithFetchTimeout(d time.Duration) FetchOption {
	return func(o *fetchOptions) { o.timeout = d }
}

func newFetchOptions(opts []FetchOption) fetchOptions {
	o := fetchOptions{timeout: DefaultFetchTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// CheckURL accepts an absolute https URL, or an http URL whose host is
// loopback (127.0.0.0/8, ::1 or localhost), and refuses every other scheme
// (javascript:, data:, file:, …). It returns a *URLError.
func CheckURL(raw string) error {
	_, err := checkURL("", raw)
	return err
}

func checkURL(field, raw string) (*url.URL, error) {
	// The scheme first, so that javascript: and data: are named as such
	// even when the rest does not parse.
	if scheme, _, ok := strings.Cut(raw, ":"); ok && isScheme(scheme) {
		if s := strings.ToLower(scheme); s != "https" && s != "http" {
			return nil, &URLError{Field: field, URL: raw, Err: fmt.Errorf("%w (not %s:)", ErrUnsupportedScheme, s)}
		}
	}
	u, err := url.Parse(raw)
	// A host-less URL ("https://:") would reach this machine's port 443.
	if err != nil || u.Scheme == "" || u.Hostname() == "" {
		return nil, &URLError{Field: field, URL: raw, Err: ErrInvalidURL}
	}
	if strings.EqualFold(u.Scheme, "http") && !isLoopback(u.Hostname()) {
		return nil, &URLError{Field: field, URL: raw, Err: ErrInsecureHTTP}
	}
	return u, nil
}

// isScheme reports whether s is an RFC 3986 §3.1 scheme.
func isScheme(s string) bool {
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guard returns a copy of hc (nil: http.DefaultClient) whose redirects must
// pass CheckURL too.
func guard(hc *http.Client) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if _, err := checkURL("redirect", req.URL.String()); err != nil {
			return err
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// do sends req within timeout and reads at most MaxBodySize of the answer.
// The body is closed; the response is returned for its status and headers.
func do(ctx context.Context, hc *http.Client, req *http.Request, timeout time.Duration) (*http.Response, []byte, error) {
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := hc.Do(req.WithContext(fctx))
	if err != nil {
		return nil, nil, fetchError(ctx, fctx, req, timeout, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodySize+1))
	if err != nil {
		return nil, nil, fetchError(ctx, fctx, req, timeout, err)
	}
	if len(body) > MaxBodySize {
		return nil, nil, fmt.Errorf("cannot read %s: %w", req.URL.Redacted(), ErrResponseTooLarge)
	}
	return resp, body, nil
}

func fetchError(ctx, fctx context.Context, req *http.Request, timeout time.Duration, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("cannot fetch %s: %w", req.URL.Redacted(), ctx.Err())
	case errors.Is(fctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("cannot fetch %s: %w within %s", req.URL.Redacted(), ErrTimeout, timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is named once, below
	}
	return fmt.Errorf("cannot fetch %s: %w", req.URL.Redacted(), err)
}

// getJSON fetches a JSON document into v. A non-200 answer is an
// *HTTPStatusError.
func getJSON(ctx context.Context, hc *http.Client, rawURL string, o fetchOptions, v any) error {
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, body, err := do(ctx, hc, req, o.timeout)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &HTTPStatusError{URL: rawURL, StatusCode: resp.StatusCode}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("cannot read %s: not a JSON document: %w", rawURL, err)
	}
	return nil
}

// isAbsent reports whether err says a well-known document is not there
// (any 4xx), so the next candidate should be tried.
func isAbsent(err error) bool {
	var se *HTTPStatusError
	return errors.As(err, &se) && se.StatusCode >= 400 && se.StatusCode < 500
}
