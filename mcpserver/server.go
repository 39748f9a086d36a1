package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/agentauth/agentauth/internal/bounded"
	"github.com/agentauth/agentauth/resource"
	"github.com/agentauth/agentauth/wire"
)

// headerMCPProtocolVersion names the request's MCP revision (MCP
// 2025-11-25 "Transports", Protocol Version Header).
const headerMCPProtocolVersion = "Mcp-Protocol-Version"

// Backend is what the MCP face serves besides MCP's own methods and tools:
// host.Host implements it, so that /mcp also answers the agent host's
// methods, and a gateway may implement it to serve its own.
type Backend interface {
	// Answer answers a request that is not MCP's own (before MCP
	// 2026-07-28: the agent host's methods, ping), and the whoami and echo
	// tools' methods, with the grant of the request (host.Host.Dispatch).
	Answer(ctx context.Context, req *wire.Message, g *resource.Grant) *wire.Message
	// Tools are the backend's own tools, listed after the face's.
	Tools() []Tool
	// CallTool runs one of Tools for the grant g: args are its arguments,
	// responses the client's answers to its input requests (MCP
	// 2026-07-28), req what the request declared.
	CallTool(ctx context.Context, g *resource.Grant, name string, args, responses map[string]json.RawMessage, req Request) (map[string]any, *wire.Error)
}

// Options configure the MCP face.
type Options struct {
	// Resource is the resource identifier (RFC 8707): POST is served at
	// its path, and DPoP proofs must name it (htu).
	Resource string
	// MetadataURL is where its RFC 9728 document is served (named by
	// every challenge), Metadata the document.
	MetadataURL string
	Metadata    func() wire.ProtectedResourceMetadata
	// Verify checks the access token of each request (resource.Verifier).
	Verify  resource.Verifier
	Backend Backend
	// Version is the server version in serverInfo (default "dev").
	Version string
	// MaxBody bounds a request's body (default wire.DefaultMaxMessageSize).
	MaxBody int64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Origin is the Origin of a request that a guard vetted (host.NewGuard)
	// or "": only that origin is allowed by CORS, never "*".
	Origin func(ctx context.Context) (string, bool)
	// DPoPProofs bound the DPoP replay cache (default
	// resource.DPoPProofLimits).
	DPoPProofs bounded.Limits
	// Fixtures adds the official MCP conformance suite's server fixtures
	// (the test_* tools, the test://static-text resource and the test_*
	// prompts) to the face's whoami and echo; without them the face has
	// no resources or prompts of its own.
	Fixtures bool
}

// Server is the MCP face, to be mounted as the catch-all of a mux:
//   - GET on the resource's path-aware /.well-known/oauth-protected-resource
//     URL (RFC 9728 §3.1): the RFC 9728 document; on the root one, when
//     the resource has a path, the same naming the origin
//     (resource.RootMetadata);
//   - any method but OPTIONS on the resource's path without a valid token:
//     401 and the challenge; POST (any other method with a token: 405);
//   - POST on the resource's path (/mcp by default): one JSON-RPC message
//     with a bearer token in the Authorization header (RFC 6750 §2.1,
//     checked by resource.Bearer), answered with application/json or, when
//     the request asked for log messages, text/event-stream: MCP
//     2026-07-28 (stateless: server/discover, _meta and the standard
//     headers on every request) and 2025-11-25, 2025-06-18 and 2025-03-26
//     (initialize, ping; no Mcp-Session-Id), with the tools whoami and
//     echo (and with Options.Fixtures the conformance suite's tools, a
//     resource and two prompts), and the Backend's tools; before
//     2026-07-28 also the Backend's methods.
//
// Every other path is 404. The metadata is readable from any origin (CORS);
// the resource's path allows by CORS only an origin a guard vetted.
type Server struct {
	opts         Options
	path         string // the resource's path: where POST is served
	metadataPath string
	bearer       *resource.Bearer
}

// New is the MCP face described by opts.
func New(opts Options) *Server {
	if opts.MaxBody <= 0 {
		opts.MaxBody = wire.DefaultMaxMessageSize
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	u, _ := url.Parse(opts.Resource)
	mu, _ := url.Parse(opts.MetadataURL)
	return &Server{opts: opts, path: cmp.Or(u.Path, "/"), metadataPath: mu.Path,
		bearer: resource.NewBearer(opts.Verify, &resource.BearerOptions{ResourceMetadataURL: opts.MetadataURL,
			Resource: opts.Resource, MaxBody: opts.MaxBody, Now: opts.Now, DPoPProofs: opts.DPoPProofs})}
}

// origin is the vetted Origin of the request, or "".
func (f *Server) origin(ctx context.Context) string {
	if f.opts.Origin == nil {
		return ""
	}
	o, _ := f.opts.Origin(ctx)
	return o
}

// ServeHTTP serves the face (see Server).
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case f.path:
		f.serveMCP(w, r)
	case f.metadataPath:
		f.serveMetadata(w, r)
	case resource.WellKnownResourceMetadata:
		f.serveRootMetadata(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serveMetadata answers the RFC 9728 §3.2 metadata request.
func (f *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	resource.ServeMetadata(w, r, f.opts.Metadata())
}

// serveRootMetadata answers the root well-known URL of a resource with a
// path (see resource.RootMetadata).
func (f *Server) serveRootMetadata(w http.ResponseWriter, r *http.Request) {
	resource.ServeMetadata(w, r, resource.RootMetadata(f.opts.Metadata()))
}

func (f *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	if origin := f.origin(r.Context()); origin != "" {
		resource.AllowOrigin(w, origin, "WWW-Authenticate")
	}
	if r.Method == http.MethodOptions {
		resource.Preflight(w, r, "POST")
		return
	}
	// The token first, whatever the method: a request without a valid one
	// gets 401 and the challenge (RFC 6750 §3, RFC 9728 §5.1) before any
	// 405, so that a client probing with HEAD or GET (Gemini CLI does when
	// it loses a POST's WWW-Authenticate) still finds the metadata.
	grant, ref := f.bearer.Check(w, r)
	if ref != nil {
		f.refuse(w, wire.ID{}, ref)
		return
	}
	if r.Method != http.MethodPost {
		// MCP Streamable HTTP: no server-sent event stream to GET.
		w.Header().Set("Allow", "POST")
		f.refuse(w, wire.ID{}, &resource.Refusal{Status: http.StatusMethodNotAllowed,
			Err: wire.Errorf(wire.CodeInvalidRequest, "invalid request: %s is not served here; POST one JSON-RPC message", r.Method)})
		return
	}
	data, err := readBody(w, r, f.opts.MaxBody)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			f.refuse(w, wire.ID{}, &resource.Refusal{Status: http.StatusRequestEntityTooLarge,
				Err: wire.Errorf(wire.CodeInvalidRequest, "invalid request: the message exceeds %d bytes", f.opts.MaxBody)})
			return
		}
		f.refuse(w, wire.ID{}, &resource.Refusal{Status: http.StatusBadRequest, Err: wire.Errorf(wire.CodeParseError, "parse error: cannot read the body")})
		return
	}
	m, derr := wire.Decode(data)
	if derr != nil {
		var id wire.ID
		if m != nil {
			id = m.ID
		}
		f.refuse(w, id, &resource.Refusal{Status: http.StatusBadRequest, Err: derr})
		return
	}
	req, ref := requestOf(r, m)
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
	if req.Stateless {
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
	resource.WriteJSON(w, status, resp)
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

// refuse writes a refusal (see resource.Refusal.Write).
func (f *Server) refuse(w http.ResponseWriter, id wire.ID, ref *resource.Refusal) {
	ref.Write(w, id, f.opts.MetadataURL)
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

// formatChallenge renders a backend's challenge as WWW-Authenticate: a scheme
// without a token is asked for one without an error code (RFC 6750 §3.1).
func (f *Server) formatChallenge(ch wire.Challenge) string {
	params := map[string]string{"resource_metadata": f.opts.MetadataURL, "scope": ch.Scope}
	if ch.Error != wire.ErrInvalidRequest {
		params["error"] = ch.Error
		params["error_description"] = ch.ErrorDescription
	}
	return wire.FormatBearerChallenge(params)
}
