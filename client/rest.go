package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentauth/agentauth/wire"
)

// RESTCall is a call of a plain HTTP tool (seed 004's agent, issue 15
// contract "Plain HTTP"): POST {Target}/tools/{Tool} with a JSON object of
// arguments and the bearer token; 200 with the tool's JSON result.
type RESTCall struct {
	// Target is the server's base URL (serve's origin).
	Target string
	Tool   string
	// Args is a JSON object (nil: {}).
	Args json.RawMessage
	// Token is sent instead of the stored credential when not empty.
	Token  string
	SignIn SignInOptions
}

// restToolURL is where a plain HTTP tool is called: {target}/tools/{tool}.
func restToolURL(target, tool string) string {
	return strings.TrimSuffix(target, "/") + "/tools/" + url.PathEscape(tool)
}

// CallREST calls a plain HTTP tool. A 401 whose JSON body says
// authentication_required (the caller's token is fine, an upstream
// sign-in is missing) is followed like any ask and the call sent once
// more; another 401 or 403 is an *AuthError with the login command.
func (cl *Client) CallREST(ctx context.Context, req RESTCall) (json.RawMessage, error) {
	token := req.Token
	if token == "" {
		var err error
		if token, err = cl.restToken(ctx, req.Target); err != nil {
			return nil, err
		}
	}
	args := req.Args
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	res, ask, err := cl.postTool(ctx, req, args, token)
	if err != nil || ask == nil {
		return res, err
	}
	w := signInWait{Token: token, Origin: httpOrigin(req.Target)}
	if err := cl.followSignIn(ctx, req.Tool, *ask, req.SignIn, w); err != nil {
		return nil, err
	}
	res, again, err := cl.postTool(ctx, req, args, token)
	if again != nil {
		return nil, stillNeeded(req.Tool, *again)
	}
	return res, err
}

// restToken is the stored credential for target (logged in through it,
// or for a resource on its origin), made usable; "" when none is stored.
func (cl *Client) restToken(ctx context.Context, target string) (string, error) {
	cs, err := cl.Credentials()
	if err != nil {
		return "", err
	}
	creds, err := cs.ForTarget(ctx, target, "")
	if err != nil {
		return "", err
	}
	if len(creds) == 0 {
		all, err := cs.Store.List(ctx)
		if err != nil {
			return "", err
		}
		for _, c := range all {
			if c.SchemeID == "" && httpOrigin(c.Resource) == httpOrigin(target) {
				creds = append(creds, c)
			}
		}
	}
	if len(creds) == 0 {
		return "", nil
	}
	c, err := cs.Usable(ctx, creds[0].Key, target)
	if err != nil {
		return "", err
	}
	return c.AccessToken, nil
}

// postTool sends one POST; ask is set when the answer is an upstream ask.
func (cl *Client) postTool(ctx context.Context, req RESTCall, args json.RawMessage, token string) (json.RawMessage, *wire.SignInAsk, error) {
	hc := cl.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	u := restToolURL(req.Target, req.Tool)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(args))
	if err != nil {
		return nil, nil, &UsageError{Err: fmt.Errorf("cannot call %s: %w", req.Tool, err)}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if token != "" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot call %s: %w", req.Tool, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, wire.DefaultMaxMessageSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the answer of %s: %w", req.Tool, err)
	}
	if len(body) > wire.DefaultMaxMessageSize {
		return nil, nil, fmt.Errorf("cannot read the answer of %s: it is over %d bytes", req.Tool, wire.DefaultMaxMessageSize)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusOK:
		if !json.Valid(body) {
			return nil, nil, fmt.Errorf("cannot read the answer of %s: it is not JSON", req.Tool)
		}
		return bytes.TrimSpace(body), nil, nil
	case resp.StatusCode == http.StatusUnauthorized && ct == "application/json":
		var b wire.AuthenticationRequiredBody
		if json.Unmarshal(body, &b) == nil && b.Error == wire.ErrAuthenticationRequired && b.AuthURL != "" {
			ask := b.Ask()
			return nil, &ask, nil
		}
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		header := resp.Header.Values("WWW-Authenticate")
		ch, _ := wire.BearerChallenge(header)
		refusal := &wire.HTTPAuthError{StatusCode: resp.StatusCode, Challenge: ch, Header: header}
		return nil, nil, &AuthError{Err: fmt.Errorf("cannot call %s: %w", req.Tool, refusal), Hint: LoginCommand(restResource(req.Target, ch.Param("resource_metadata")), "")}
	}
	return nil, nil, fmt.Errorf("cannot call %s: %w", req.Tool, errors.New(restStatus(resp.StatusCode, body, token)))
}

// wellKnownPRM is the well-known path of protected resource metadata
// (RFC 9728 §3).
const wellKnownPRM = "/.well-known/oauth-protected-resource"

// restResource is what to log in to for a refused plain HTTP tool: the
// resource whose metadata the challenge names (RFC 9728 §3.1: the path
// after the well-known prefix is the resource's, e.g. serve's /mcp), when
// it is on target's origin; target otherwise. A token for that resource
// is then found for target by its origin (restToken).
func restResource(target, metadataURL string) string {
	u, err := url.Parse(metadataURL)
	if err != nil || u.Scheme+"://"+u.Host != httpOrigin(target) || u.RawQuery != "" {
		return target
	}
	rest, ok := strings.CutPrefix(u.EscapedPath(), wellKnownPRM)
	if !ok || rest != "" && rest[0] != '/' {
		return target
	}
	return httpOrigin(target) + rest
}

// restStatus is "HTTP 500 Internal Server Error: <start of the body>",
// without the token should the server echo it.
func restStatus(code int, body []byte, token string) string {
	s := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	text := strings.TrimSpace(string(body))
	if token != "" {
		text = strings.ReplaceAll(text, token, "[token]")
	}
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if text != "" {
		s += ": " + text
	}
	return s
}
