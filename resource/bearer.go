package resource

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/wire"
)

// Refusal is the answer of a protected resource before its handler runs:
// an HTTP status, the parameters of its RFC 6750 §3 challenge (nil: no
// WWW-Authenticate) and the JSON-RPC error of the body.
type Refusal struct {
	Status    int
	Challenge map[string]string
	Err       *wire.Error
	// DPoP makes the challenge a DPoP one (RFC 9449 §7.1).
	DPoP bool
	// RetryAfter, in seconds, is sent as Retry-After (RFC 9110 §10.2.3).
	RetryAfter string
}

// Write answers with the refusal: its status, its challenge with
// resource_metadata (RFC 9728 §5.1) and a JSON-RPC error response with id.
func (ref *Refusal) Write(w http.ResponseWriter, id wire.ID, metadataURL string) {
	if ref.Challenge != nil {
		params := map[string]string{"resource_metadata": metadataURL}
		for k, v := range ref.Challenge {
			params[k] = v
		}
		ch := wire.FormatBearerChallenge(params)
		if ref.DPoP {
			ch = wire.TokenTypeDPoP + strings.TrimPrefix(ch, "Bearer")
		}
		w.Header().Set("WWW-Authenticate", ch)
	}
	if ref.RetryAfter != "" {
		w.Header().Set("Retry-After", ref.RetryAfter)
	}
	WriteJSON(w, ref.Status, wire.NewErrorResponse(id, ref.Err))
}

// Verifier checks the access token of a request ("" when it carries none,
// which a Verifier refuses with 401 and a challenge without an error code,
// RFC 6750 §3.1): it returns the grant the token establishes, or the
// refusal to answer (401 invalid_token for a rejected token, 503 when the
// token cannot be checked now); exactly one of the two is not nil.
// host.Host.VerifyBearer is one.
type Verifier func(ctx context.Context, token string) (*Grant, *Refusal)

// BearerOptions configure RequireBearerToken.
type BearerOptions struct {
	// ResourceMetadataURL is the resource's RFC 9728 document, named by
	// every challenge (resource_metadata, RFC 9728 §5.1).
	ResourceMetadataURL string
	// Resource is the resource identifier: the htu a DPoP proof must name
	// (RFC 9449 §4.3).
	Resource string
	// Scopes are scopes every request needs: a grant without one of them
	// is refused with 403 insufficient_scope (RFC 6750 §3.1).
	Scopes []string
	// MaxBody bounds a form body read to look for an access token (default
	// wire.DefaultMaxMessageSize).
	MaxBody int64
	// Now is the clock of DPoP proofs (default time.Now).
	Now func() time.Time
	// DPoPProofs bound the DPoP replay cache; zero: DPoPProofLimits.
	DPoPProofs bounded.Limits
}

// grantKey is the context key of the grant RequireBearerToken accepted.
type grantKey struct{}

// GrantFromContext is the grant RequireBearerToken accepted for the
// request whose context is ctx, or nil.
func GrantFromContext(ctx context.Context) *Grant {
	g, _ := ctx.Value(grantKey{}).(*Grant)
	return g
}

// RequireBearerToken protects a handler (as the MCP Go SDK's
// auth.RequireBearerToken does): it reads the access token of each request
// from its Authorization header only (RFC 6750 §2.1, Bearer or DPoP),
// checks it with verify, holds a DPoP-bound token to a proof of its key
// (RFC 9449 §7.1, each proof once) and the grant to opts.Scopes, and then
// calls next with the grant in the request's context (GrantFromContext).
// Otherwise it answers 400, 401, 403, 415 or 503 with the RFC 6750 §3 /
// RFC 9728 §5.1 WWW-Authenticate challenge and a JSON-RPC error body, and
// next does not run. Each returned middleware has its own DPoP replay
// cache.
func RequireBearerToken(verify Verifier, opts *BearerOptions) func(http.Handler) http.Handler {
	b := NewBearer(verify, opts)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g, ref := b.Check(w, r)
			if ref != nil {
				ref.Write(w, wire.ID{}, b.opts.ResourceMetadataURL)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), grantKey{}, g)))
		})
	}
}

// Bearer is the check of RequireBearerToken, for a handler that answers
// its refusals itself (the MCP face, which answers a refusal as a JSON-RPC
// error and keeps the grant out of the context).
type Bearer struct {
	verify Verifier
	opts   BearerOptions
	now    func() time.Time
	// jtis are the DPoP proofs seen (RFC 9449 §11.1).
	jtis *bounded.Memory
}

// NewBearer is a Bearer with its own DPoP replay cache.
func NewBearer(verify Verifier, opts *BearerOptions) *Bearer {
	b := &Bearer{verify: verify, now: time.Now}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.DPoPProofs == (bounded.Limits{}) {
		b.opts.DPoPProofs = DPoPProofLimits
	}
	b.jtis = bounded.NewMemory(b.opts.DPoPProofs)
	if b.opts.Now != nil {
		b.now = b.opts.Now
	}
	if b.opts.MaxBody <= 0 {
		b.opts.MaxBody = wire.DefaultMaxMessageSize
	}
	return b
}

// Check is the grant of a request, or the refusal to answer it with.
func (b *Bearer) Check(w http.ResponseWriter, r *http.Request) (*Grant, *Refusal) {
	token, scheme, ref := credentials(w, r, b.opts.MaxBody)
	if ref != nil {
		return nil, ref
	}
	g, ref := b.verify(r.Context(), token)
	if ref != nil {
		return nil, ref
	}
	if g == nil { // a Verifier that broke its contract: refuse, do not serve
		return nil, &Refusal{Status: http.StatusInternalServerError,
			Err: wire.Errorf(wire.CodeInternalError, "internal error: the token was neither accepted nor refused")}
	}
	if ref := b.checkDPoP(r, scheme, token, g); ref != nil {
		return nil, ref
	}
	if !g.HasScopes(b.opts.Scopes) {
		scope := wire.JoinScope(b.opts.Scopes)
		return nil, &Refusal{Status: http.StatusForbidden,
			Challenge: map[string]string{"error": wire.ErrInsufficientScope, "error_description": "This resource needs scope " + scope, "scope": scope},
			Err:       wire.Errorf(wire.CodeInvalidRequest, "insufficient scope: this resource needs scope %s", scope)}
	}
	return g, nil
}

// credentials reads the bearer token from the Authorization header only
// (RFC 6750 §2.1) and refuses, with 400 invalid_request (§3.1), a token in
// the query string (§2.3) or a form body (§2.2), several Authorization
// headers, a malformed Bearer header, and, on a request with a body
// (POST, PUT, PATCH), a body that is not JSON (415). Another
// authentication scheme than Bearer or DPoP (RFC 9449 §7.1, whose proof
// checkDPoP checks) counts as no token (§3). It returns the token and its
// scheme, Bearer or DPoP.
func credentials(w http.ResponseWriter, r *http.Request, maxBody int64) (token, scheme string, ref *Refusal) {
	invalid := func(desc string) *Refusal {
		return &Refusal{Status: http.StatusBadRequest,
			Challenge: map[string]string{"error": wire.ErrInvalidRequest, "error_description": desc},
			Err:       wire.Errorf(wire.CodeInvalidRequest, "invalid request: %s", desc)}
	}
	// Descriptions go into WWW-Authenticate: printable ASCII only.
	const headerOnly = "send it in the Authorization header (RFC 6750 section 2.1)"
	// The query is parsed only when it may name access_token (an escaped
	// name contains "_" or "%5F"), the media type only when it is not
	// exactly application/json.
	if q := r.URL.RawQuery; (strings.Contains(q, "_") || strings.Contains(q, "%")) && r.URL.Query().Has("access_token") {
		return "", "", invalid("An access token in the query string is refused: " + headerOnly)
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		ct := r.Header.Get("Content-Type")
		if ct != "application/json" {
			ct, _, _ = mime.ParseMediaType(ct)
		}
		switch ct {
		case "application/json":
		case "application/x-www-form-urlencoded":
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			if err := r.ParseForm(); err == nil && r.PostForm.Has("access_token") {
				return "", "", invalid("An access token in the request body is refused: " + headerOnly)
			}
			fallthrough
		default:
			return "", "", &Refusal{Status: http.StatusUnsupportedMediaType,
				Err: wire.Errorf(wire.CodeInvalidRequest, "invalid request: the body must be one JSON-RPC message with Content-Type: application/json")}
		}
	}
	values := r.Header.Values("Authorization")
	switch {
	case len(values) == 0:
		return "", "", nil
	case len(values) > 1:
		return "", "", invalid("The request has more than one Authorization header")
	}
	scheme, rest, _ := strings.Cut(values[0], " ")
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		scheme = "Bearer"
	case strings.EqualFold(scheme, wire.TokenTypeDPoP):
		scheme = wire.TokenTypeDPoP
	default:
		return "", "", nil
	}
	token = strings.TrimLeft(rest, " ")
	if !IsB64Token(token) {
		return "", "", invalid("The Authorization header must be " + scheme + " followed by one token (RFC 6750 section 2.1)")
	}
	return token, scheme, nil
}

// b64TokenChars are the bytes of an RFC 6750 §2.1 b64token before its "="s.
var b64TokenChars = func() (t [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/") {
		t[c] = true
	}
	return t
}()

// IsB64Token checks the RFC 6750 §2.1 b64token syntax.
func IsB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		if !b64TokenChars[body[i]] {
			return false
		}
	}
	return true
}

// The headers of every JSON answer, assigned without canonicalising or
// allocating their values (net/http never modifies them).
var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// WriteJSON writes v as a JSON body with status, not to be cached; a
// *wire.Message is encoded by its own encoder, in one pass.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	var b []byte
	var err error
	if m, ok := v.(*wire.Message); ok {
		b, err = m.MarshalJSON()
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		http.Error(w, "internal error: cannot encode the answer", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Cache-Control"] = noStore
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
