package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// Bounds on every document a resource server fetches (metadata, keys,
// introspections).
const (
	maxDocumentSize = 1 << 20
	FetchTimeout    = 10 * time.Second
)

// fetchJSON GETs an https (or loopback http) URL and decodes its JSON body,
// refusing bodies over 1 MiB.
func fetchJSON(ctx context.Context, client *http.Client, u string, v any) error {
	if err := CheckFetchURL(u); err != nil {
		return fmt.Errorf("cannot fetch: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("cannot fetch %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot fetch %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cannot fetch %s: HTTP %d", u, resp.StatusCode)
	}
	return readJSON(resp.Body, u, v)
}

// readJSON decodes a JSON body of at most 1 MiB.
func readJSON(r io.Reader, u string, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, maxDocumentSize+1))
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", u, err)
	}
	if len(body) > maxDocumentSize {
		return fmt.Errorf("cannot read %s: the response exceeds %d bytes", u, maxDocumentSize)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("cannot read %s: %w", u, err)
	}
	return nil
}

// discoverAuthServer fetches an authorization server's metadata: first the
// RFC 8414 §3.1 well-known URI (inserted before the issuer's path), then
// OpenID Connect Discovery 1.0 §4 (appended to the issuer). The document's
// issuer must equal the one asked for (RFC 8414 §3.3).
func discoverAuthServer(ctx context.Context, client *http.Client, issuer string) (*wire.AuthServerMetadata, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("cannot discover %s: %w", issuer, err)
	}
	path := strings.TrimSuffix(u.Path, "/")
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration",
	}
	var firstErr error
	for _, c := range candidates {
		var md wire.AuthServerMetadata
		if err := fetchJSON(ctx, client, c, &md); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if md.Issuer != issuer {
			return nil, fmt.Errorf("cannot discover %s: its metadata names issuer %q (RFC 8414 §3.3)", issuer, md.Issuer)
		}
		return &md, nil
	}
	return nil, fmt.Errorf("cannot discover the authorization server %s: %w", issuer, firstErr)
}
