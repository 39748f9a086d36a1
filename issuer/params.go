package issuer

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxSubject bounds a subject typed on a consent page, in characters.
const maxSubject = 255

// Request parameter bounds, in bytes: a longer value is refused with
// invalid_request (or, for client_id and redirect_uri at the
// authorization endpoint, an error page).
const (
	maxStateBytes = 1024 // state
	maxScopeBytes = 1024 // scope
	maxURIBytes   = 2048 // redirect_uri, resource
	maxParamBytes = 256  // client_id, response_type, code_challenge(_method), a typed user code
)

// paramLimit is the bound on an authorization request parameter the
// issuer reads, or 0 for one it ignores (RFC 6749 §3.1: unrecognized
// parameters are ignored, and never kept).
func paramLimit(name string) int {
	switch name {
	case "state":
		return maxStateBytes
	case "scope":
		return maxScopeBytes
	case "redirect_uri", "resource":
		return maxURIBytes
	case "client_id", "response_type", "code_challenge", "code_challenge_method":
		return maxParamBytes
	}
	return 0
}

// checkLengths refuses a parameter the issuer reads over its bound.
func checkLengths(v url.Values) *oauthError {
	for k, vs := range v {
		n := paramLimit(k)
		for _, s := range vs {
			if n > 0 && len(s) > n {
				return badRequest("invalid_request", fmt.Sprintf("%s is longer than %d bytes", k, n))
			}
		}
	}
	return nil
}

// parseScope splits a scope parameter into its tokens (RFC 6749 §3.3:
// space-delimited, each made of %x21 / %x23-5B / %x5D-7E), dropping
// duplicates.
func parseScope(s string) ([]string, error) {
	var scopes []string
	for _, tok := range strings.Fields(s) {
		for _, r := range tok {
			if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
				return nil, fmt.Errorf("scope %q has a character RFC 6749 §3.3 forbids", tok)
			}
		}
		if !slices.Contains(scopes, tok) {
			scopes = append(scopes, tok)
		}
	}
	return scopes, nil
}

// requestedScope reads the scope parameter; none means ScopesSupported.
func (i *Issuer) requestedScope(v url.Values) (string, *oauthError) {
	if len(v.Get("scope")) > maxScopeBytes {
		return "", badRequest("invalid_request", fmt.Sprintf("scope is longer than %d bytes", maxScopeBytes))
	}
	scopes, err := parseScope(v.Get("scope"))
	if err != nil {
		return "", badRequest("invalid_scope", err.Error())
	}
	if len(scopes) == 0 {
		scopes = i.opts.ScopesSupported
	}
	return strings.Join(scopes, " "), nil
}

// narrowScope checks that a refresh request's scope is within the granted
// one (RFC 6749 §6); none means the granted scope.
func narrowScope(v url.Values, granted string) (string, *oauthError) {
	asked, err := parseScope(v.Get("scope"))
	if err != nil {
		return "", badRequest("invalid_scope", err.Error())
	}
	if len(asked) == 0 {
		return granted, nil
	}
	have := strings.Fields(granted)
	for _, s := range asked {
		if !slices.Contains(have, s) {
			return "", badRequest("invalid_scope", fmt.Sprintf("scope %q was not granted", s))
		}
	}
	return strings.Join(asked, " "), nil
}

// checkResource accepts an RFC 8707 §2 resource indicator: an absolute URI
// without a fragment, at most maxURIBytes long.
func checkResource(raw string) error {
	if len(raw) > maxURIBytes {
		return fmt.Errorf("resource is longer than %d bytes", maxURIBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("cannot parse resource %q", raw)
	}
	if !u.IsAbs() || (u.Host == "" && u.Opaque == "") {
		return fmt.Errorf("resource %q is not an absolute URI", raw)
	}
	if strings.Contains(raw, "#") {
		return fmt.Errorf("resource %q has a fragment", raw)
	}
	return nil
}

// requestedResource reads the resource parameter (RFC 8707 §2); none means
// Options.DefaultResource. One resource per request is supported.
func (i *Issuer) requestedResource(v url.Values) (string, *oauthError) {
	switch vs := v["resource"]; len(vs) {
	case 0:
		return i.opts.DefaultResource, nil
	case 1:
		if err := checkResource(vs[0]); err != nil {
			return "", badRequest("invalid_target", err.Error())
		}
		return vs[0], nil
	default:
		return "", badRequest("invalid_target", "only one resource per request is supported")
	}
}

// sameResource checks a token request's resource, if any, against the
// audience that was authorized (RFC 8707 §2.2).
func sameResource(v url.Values, authorized string) *oauthError {
	vs := v["resource"]
	if len(vs) == 0 {
		return nil
	}
	if len(vs) > 1 {
		return badRequest("invalid_target", "only one resource per request is supported")
	}
	if err := checkResource(vs[0]); err != nil {
		return badRequest("invalid_target", err.Error())
	}
	if vs[0] != authorized {
		return badRequest("invalid_target", fmt.Sprintf("resource %q was not authorized; the grant is for %q", vs[0], authorized))
	}
	return nil
}

// checkSubject accepts a dev user name: 1 to 255 printable characters.
func checkSubject(s string) error {
	if s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxSubject || strings.TrimSpace(s) != s {
		return errors.New("the user name must be 1 to 255 characters without surrounding spaces")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return errors.New("the user name must not contain control characters")
		}
	}
	return nil
}
