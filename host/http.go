package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/wire"
)

// WellKnownResourceMetadata is the RFC 9728 §3 well-known path prefix.
const WellKnownResourceMetadata = "/.well-known/oauth-protected-resource"

// headerMCPProtocolVersion names the request's MCP revision (MCP
// 2025-11-25 "Transports", Protocol Version Header).
const headerMCPProtocolVersion = "Mcp-Protocol-Version"

// ResourceMetadataURL is where the host's RFC 9728 document is served: the
// well-known prefix inserted between the resource's host and its path
// (RFC 9728 §3.1), e.g. http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp.
func (h *Host) ResourceMetadataURL() string {
	origin, path, query := metadataAddress(h.cfg.Resource)
	if origin == "" { // checked by checkResolved
		return ""
	}
	if query != "" {
		path += "?" + query
	}
	return origin + path
}

// HTTPHandler serves the host's HTTP face (PROTOCOL.md "HTTP resource"),
// to be mounted as the catch-all of a mux:
//   - GET on /.well-known/oauth-protected-resource and on its path-aware
//     form for the resource (RFC 9728 §3.1): the RFC 9728 document;
//   - POST on the resource's path (/mcp by default): one JSON-RPC message
//     with a bearer token in the Authorization header (RFC 6750 §2.1),
//     answered with application/json: an MCP server (see mcp.go) for
//     MCP 2026-07-28 (stateless: server/discover, _meta and the standard
//     headers on every request) and for 2025-11-25, 2025-06-18 and
//     2025-03-26 (initialize, ping; no Mcp-Session-Id), with the tools
//     whoami and echo, a resource and two prompts; before 2026-07-28
//     also the agent host's own methods.
//
// Every other path is 404. The metadata is readable from any origin (CORS);
// the resource's path allows by CORS only an origin a guard vetted (see
// NewGuard), never "*".
func (h *Host) HTTPHandler() http.Handler {
	u, _ := url.Parse(h.cfg.Resource)
	f := &httpFace{h: h, path: cmp.Or(u.Path, "/"), metadataURL: h.ResourceMetadataURL()}
	mu, _ := url.Parse(f.metadataURL)
	f.metadataPath = mu.Path
	f.jtis = bounded.NewMemory(DPoPProofLimits)
	f.maxBody = h.maxMsg
	if f.maxBody <= 0 {
		f.maxBody = wire.DefaultMaxMessageSize
	}
	return f
}

type httpFace struct {
	h            *Host
	path         string // the resource's path: where POST is served
	metadataPath string
	metadataURL  string
	maxBody      int64
	// jtis are the DPoP proofs seen (RFC 9449 §11.1).
	jtis *bounded.Memory
}

func (f *httpFace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case f.path:
		f.serveMCP(w, r)
	case WellKnownResourceMetadata, f.metadataPath:
		f.serveMetadata(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serveMetadata answers the RFC 9728 §3.2 metadata request.
func (f *httpFace) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		writeHTTPJSON(w, http.StatusOK, f.h.ProtectedResourceMetadata())
	case http.MethodOptions:
		preflight(w, "GET")
	default:
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: GET the protected resource metadata", http.StatusMethodNotAllowed)
	}
}

func preflight(w http.ResponseWriter, method string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", method)
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Mcp-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// httpRefusal is an answer of the HTTP face before any method runs: an
// HTTP status, the Bearer challenge parameters (none: no WWW-Authenticate)
// and the JSON-RPC error of the body.
type httpRefusal struct {
	status    int
	challenge map[string]string
	err       *wire.Error
	// dpop makes the challenge a DPoP one (RFC 9449 §7.1).
	dpop bool
	// retryAfter, in seconds, is sent as Retry-After.
	retryAfter string
}

func (f *httpFace) serveMCP(w http.ResponseWriter, r *http.Request) {
	if origin, _ := guardedOrigin(r.Context()); origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Expose-Headers", "WWW-Authenticate")
		w.Header().Add("Vary", "Origin")
	}
	switch r.Method {
	case http.MethodPost:
	case http.MethodOptions:
		preflight(w, "POST")
		return
	default:
		// MCP Streamable HTTP: no server-sent event stream to GET.
		w.Header().Set("Allow", "POST")
		f.refuse(w, wire.ID{}, &httpRefusal{status: http.StatusMethodNotAllowed,
			err: wire.Errorf(wire.CodeInvalidRequest, "invalid request: %s is not served here; POST one JSON-RPC message", r.Method)})
		return
	}
	token, scheme, ref := f.credentials(w, r)
	if ref != nil {
		f.refuse(w, wire.ID{}, ref)
		return
	}
	grant, ref := f.authenticate(r.Context(), token)
	if ref == nil {
		ref = f.checkDPoP(r, scheme, token, grant)
	}
	if ref != nil {
		f.refuse(w, wire.ID{}, ref)
		return
	}
	data, err := readBody(w, r, f.maxBody)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			f.refuse(w, wire.ID{}, &httpRefusal{status: http.StatusRequestEntityTooLarge,
				err: wire.Errorf(wire.CodeInvalidRequest, "invalid request: the message exceeds %d bytes", f.maxBody)})
			return
		}
		f.refuse(w, wire.ID{}, &httpRefusal{status: http.StatusBadRequest, err: wire.Errorf(wire.CodeParseError, "parse error: cannot read the body")})
		return
	}
	m, derr := wire.Decode(data)
	if derr != nil {
		var id wire.ID
		if m != nil {
			id = m.ID
		}
		f.refuse(w, id, &httpRefusal{status: http.StatusBadRequest, err: derr})
		return
	}
	req, ref := mcpRequestOf(r, m)
	if ref != nil {
		f.refuse(w, m.ID, ref)
		return
	}
	if !m.IsRequest() {
		// A notification (notifications/initialized, …) or a response:
		// accepted, no body (MCP "Transports", Sending Messages).
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var resp *wire.Message
	status := http.StatusOK
	if req.stateless {
		resp, status = f.answerStateless(r.Context(), m, grant, &req)
	} else {
		resp = f.answerLegacy(r.Context(), m, grant, &req)
	}
	if ch, ok := authChallenge(resp.Error); ok {
		status = http.StatusUnauthorized
		if ch.Error == wire.ErrInsufficientScope {
			status = http.StatusForbidden
		}
		w.Header().Set("WWW-Authenticate", f.formatChallenge(ch))
	}
	if len(req.logs) > 0 && resp.Error == nil {
		writeEventStream(w, append(req.logs, resp))
		return
	}
	writeHTTPJSON(w, status, resp)
}

// readBody reads a request body of at most limit bytes, into a buffer of
// its Content-Length when it declares one (net/http ends such a body
// after Content-Length bytes).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength <= 0 || r.ContentLength > limit {
		return io.ReadAll(body)
	}
	buf := make([]byte, r.ContentLength)
	_, err := io.ReadFull(body, buf)
	return buf, err
}

// writeEventStream answers with the messages as server-sent events, the
// response last (MCP "Transports", Sending Messages: notifications about
// the request may precede its response on the request's own stream).
func writeEventStream(w http.ResponseWriter, msgs []*wire.Message) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			continue
		}
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
	}
}

// credentials reads the bearer token from the Authorization header only
// (RFC 6750 §2.1) and refuses, with 400 invalid_request (§3.1), a token in
// the query string (§2.3) or a form body (§2.2), several Authorization
// headers, a malformed Bearer header, and a body that is not JSON (415).
// Another authentication scheme than Bearer or DPoP (RFC 9449 §7.1, whose
// proof checkDPoP checks) counts as no token (§3). It returns the token and
// its scheme, Bearer or DPoP.
func (f *httpFace) credentials(w http.ResponseWriter, r *http.Request) (token, scheme string, ref *httpRefusal) {
	invalid := func(desc string) *httpRefusal {
		return &httpRefusal{status: http.StatusBadRequest,
			challenge: map[string]string{"error": wire.ErrInvalidRequest, "error_description": desc},
			err:       wire.Errorf(wire.CodeInvalidRequest, "invalid request: %s", desc)}
	}
	// Descriptions go into WWW-Authenticate: printable ASCII only.
	const headerOnly = "send it in the Authorization header (RFC 6750 section 2.1)"
	// The query is parsed only when it may name access_token (an escaped
	// name contains "_" or "%5F"), the media type only when it is not
	// exactly application/json.
	if q := r.URL.RawQuery; (strings.Contains(q, "_") || strings.Contains(q, "%")) && r.URL.Query().Has("access_token") {
		return "", "", invalid("An access token in the query string is refused: " + headerOnly)
	}
	ct := r.Header.Get("Content-Type")
	if ct != "application/json" {
		ct, _, _ = mime.ParseMediaType(ct)
	}
	switch ct {
	case "application/json":
	case "application/x-www-form-urlencoded":
		r.Body = http.MaxBytesReader(w, r.Body, f.maxBody)
		if err := r.ParseForm(); err == nil && r.PostForm.Has("access_token") {
			return "", "", invalid("An access token in the request body is refused: " + headerOnly)
		}
		fallthrough
	default:
		return "", "", &httpRefusal{status: http.StatusUnsupportedMediaType,
			err: wire.Errorf(wire.CodeInvalidRequest, "invalid request: the body must be one JSON-RPC message with Content-Type: application/json")}
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
	if !isB64Token(token) {
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

// isB64Token checks the RFC 6750 §2.1 b64token syntax.
func isB64Token(s string) bool {
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

// authenticate validates the request's token through the grant cache (see
// ValidateBearer): 401 without a token (no error code, RFC 6750 §3.1) or
// with a rejected one (invalid_token), 503 when it cannot be checked.
func (f *httpFace) authenticate(ctx context.Context, token string) (*Grant, *httpRefusal) {
	if token == "" {
		_, ch, _ := f.h.ValidateBearer(ctx, "")
		f.h.refused.Add(1)
		f.h.log.Info("auth decision", "face", "http", "scheme", ch.SchemeID, "outcome", "denied", "reason", ch.Error+": "+ch.ErrorDescription)
		return nil, &httpRefusal{status: http.StatusUnauthorized, challenge: map[string]string{"scope": ch.Scope},
			err: f.h.authRequired([]wire.Challenge{*ch})}
	}
	g, ch, err := f.h.ValidateBearer(ctx, token)
	switch {
	case err != nil:
		return nil, &httpRefusal{status: http.StatusServiceUnavailable,
			err: wire.Errorf(wire.CodeInternalError, "internal error: cannot validate the token now; try again later")}
	case ch != nil:
		return nil, &httpRefusal{status: http.StatusUnauthorized,
			challenge: map[string]string{"error": ch.Error, "error_description": ch.ErrorDescription, "scope": ch.Scope},
			err:       f.h.authRequired([]wire.Challenge{*ch})}
	}
	return g, nil
}

// refuse writes a refusal: its status, its challenge (with
// resource_metadata, RFC 9728 §5.1) and a JSON-RPC error response.
func (f *httpFace) refuse(w http.ResponseWriter, id wire.ID, ref *httpRefusal) {
	if ref.challenge != nil {
		params := map[string]string{"resource_metadata": f.metadataURL}
		for k, v := range ref.challenge {
			params[k] = v
		}
		ch := wire.FormatBearerChallenge(params)
		if ref.dpop {
			ch = wire.TokenTypeDPoP + strings.TrimPrefix(ch, "Bearer")
		}
		w.Header().Set("WWW-Authenticate", ch)
	}
	if ref.retryAfter != "" {
		w.Header().Set("Retry-After", ref.retryAfter)
	}
	writeHTTPJSON(w, ref.status, wire.NewErrorResponse(id, ref.err))
}

// authChallenge picks the challenge of a -32007 answer for the HTTP
// status and header: an insufficient_scope one first (403), else the first.
func authChallenge(e *wire.Error) (wire.Challenge, bool) {
	d, ok := e.AuthRequired()
	if !ok || len(d.Challenges) == 0 {
		return wire.Challenge{}, false
	}
	for _, ch := range d.Challenges {
		if ch.Error == wire.ErrInsufficientScope {
			return ch, true
		}
	}
	return d.Challenges[0], true
}

// formatChallenge renders a host challenge as WWW-Authenticate: a scheme
// without a token is asked for one without an error code (RFC 6750 §3.1).
func (f *httpFace) formatChallenge(ch wire.Challenge) string {
	params := map[string]string{"resource_metadata": f.metadataURL, "scope": ch.Scope}
	if ch.Error != wire.ErrInvalidRequest {
		params["error"] = ch.Error
		params["error_description"] = ch.ErrorDescription
	}
	return wire.FormatBearerChallenge(params)
}

// The headers of every JSON answer, assigned without canonicalising or
// allocating their values (net/http never modifies them).
var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// writeHTTPJSON writes v as the JSON body; a *wire.Message is encoded by
// its own encoder, in one pass.
func writeHTTPJSON(w http.ResponseWriter, status int, v any) {
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
