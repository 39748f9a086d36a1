package wire

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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// MCPStatelessVersion is the MCP revision agentauth's HTTP client offers
// first: no initialize and no session; server/discover, and every request
// names the version and the client's capabilities in _meta and repeats its
// method (and name) in headers (MCP 2026-07-28 "Lifecycle", "Transports").
const MCPStatelessVersion = "2026-07-28"

// MCPProtocolVersion is the revision initialize offers when the server
// does not speak MCPStatelessVersion.
const MCPProtocolVersion = "2025-11-25"

// clientVersions are the revisions the HTTP client speaks, newest first.
var clientVersions = []string{MCPStatelessVersion, MCPProtocolVersion, "2025-06-18", "2025-03-26"}

// MCPClientVersions lists the revisions the HTTP client speaks, newest
// first: the values HTTPSession.Version takes.
func MCPClientVersions() []string { return slices.Clone(clientVersions) }

// mcpVersions are the revisions initialize may be answered with: agentauth
// only sends initialize, notifications/initialized and the caller's
// method, which mean the same in each.
var mcpVersions = clientVersions[1:]

// MCP Streamable HTTP headers (MCP 2025-11-25 and 2026-07-28 "Transports").
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
)

// MCP methods and error codes the HTTP client sends or reads.
const (
	methodInitialized = "notifications/initialized"
	methodToolsCall   = "tools/call"
	// MethodServerDiscover replaces initialize in MCP 2026-07-28.
	MethodServerDiscover = "server/discover"
	// codeHeaderMismatch is MCP 2026-07-28's HEADER_MISMATCH error.
	codeHeaderMismatch = -32020
)

// _meta keys of MCP 2026-07-28 requests and results ("Lifecycle",
// "Logging"): the one place both ends of agentauth name them.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
)

// ErrSessionExpired means the server answered 404 to a request carrying the
// session id: the session is gone and the client must initialize again
// (MCP 2025-11-25 "Transports", Session Management).
var ErrSessionExpired = errors.New("the MCP session expired or was ended by the server")

// HTTPAuthError is a 401 or 403 answer: the caller decides whether to run
// discovery, log in or step up (RFC 6750 §3, RFC 9728 §5.1).
type HTTPAuthError struct {
	StatusCode int
	// Challenge is the first Bearer challenge of WWW-Authenticate; its
	// Scheme is empty when there was none.
	Challenge AuthChallenge
	// Header holds the raw WWW-Authenticate values.
	Header []string
}

func (e *HTTPAuthError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the server refused the request: HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if code := e.Challenge.Param("error"); code != "" {
		fmt.Fprintf(&b, ": %s", code)
		if d := e.Challenge.Param("error_description"); d != "" {
			fmt.Fprintf(&b, " (%s)", d)
		}
	}
	if s := e.Challenge.Param("scope"); s != "" {
		fmt.Fprintf(&b, ", needs scope %q", s)
	}
	return b.String()
}

// HTTPStatusError is any other non-2xx answer, with the start of its body.
type HTTPStatusError struct {
	StatusCode int
	// Excerpt is at most 200 printable characters of the body, with the
	// request's token (should a server echo it) replaced by "[token]".
	Excerpt string
}

func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("the server answered HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Excerpt != "" {
		msg += ": " + e.Excerpt
	}
	return msg
}

// MCPImplementation names an MCP client or server (clientInfo, serverInfo).
type MCPImplementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// MCPInitializeResult is the result of MCP initialize.
type MCPInitializeResult struct {
	ProtocolVersion string            `json:"protocolVersion"`
	Capabilities    json.RawMessage   `json:"capabilities,omitempty"`
	ServerInfo      MCPImplementation `json:"serverInfo"`
	Instructions    string            `json:"instructions,omitempty"`
	// Raw is the result as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// HTTPSession is a client session of the MCP Streamable HTTP transport
// (MCP 2026-07-28 and 2025-11-25 "Transports"): every message is a POST to
// one endpoint, answered with application/json or a text/event-stream. It
// does not open the optional GET stream of 2025-11-25 (2026-07-28 has none):
// a command-line call needs no unsolicited messages.
type HTTPSession struct {
	endpoint string
	client   *http.Client
	token    func(context.Context) (string, error)
	limit    int64

	// OnMessage, when set, receives each request or notification the
	// server sends on a response stream before its response. Requests are
	// answered by the session: ping with an empty result, others by
	// HandleRequest, or with -32601 when it is nil.
	OnMessage func(*Message)
	// HandleRequest, when set, answers a request (other than ping) the
	// server sends on a response stream (MCP 2025-11-25: elicitation/create
	// and the like): its result, or its error.
	HandleRequest func(ctx context.Context, m *Message) (any, *Error)
	// Capabilities are the client capabilities declared in initialize
	// and in MCP 2026-07-28's request _meta; nil declares none ({}).
	Capabilities json.RawMessage
	// Version, when set (one of MCPClientVersions), is the only revision
	// Initialize speaks: MCPStatelessVersion sends server/discover with no
	// fallback, an earlier one initialize offering it, and the server must
	// answer with the same. Empty: the newest both sides speak.
	Version string
	// Header is added to every request (proxy --header); the transport's
	// own headers (Authorization, Mcp-*) win over it.
	Header http.Header

	nextID          atomic.Int64
	mu              sync.Mutex
	sessionID       string
	protocolVersion string
	clientInfo      MCPImplementation
}

// NewHTTPSession prepares a session with the MCP endpoint (an http or https
// URL). token is called before every request; an empty token sends no
// Authorization header, and a nil token function means no token at all.
// A nil client means http.DefaultClient.
func NewHTTPSession(endpoint string, client *http.Client, token func(context.Context) (string, error)) (*HTTPSession, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cannot use %q as an MCP endpoint: want an http or https URL", endpoint)
	}
	if client == nil {
		client = http.DefaultClient
	}
	if token == nil {
		token = func(context.Context) (string, error) { return "", nil }
	}
	return &HTTPSession{endpoint: endpoint, client: client, token: token, limit: DefaultMaxMessageSize}, nil
}

// SessionID is the Mcp-Session-Id the server assigned at initialize, or "".
func (s *HTTPSession) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

// ProtocolVersion is the MCP revision negotiated by Initialize, or "".
func (s *HTTPSession) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protocolVersion
}

// Initialize opens the conversation: server/discover offering
// MCPStatelessVersion (MCP 2026-07-28 "Lifecycle"), and when the server
// refuses it otherwise than with a 401 or 403 (a server of an earlier
// revision answers 400, 404 or -32601), initialize offering
// MCPProtocolVersion and notifications/initialized (MCP 2025-11-25
// "Lifecycle"). Later requests carry the version agreed on.
func (s *HTTPSession) Initialize(ctx context.Context, clientName, version string) (*MCPInitializeResult, error) {
	s.mu.Lock()
	s.clientInfo = MCPImplementation{Name: clientName, Version: version}
	s.mu.Unlock()
	switch s.Version {
	case "":
	case MCPStatelessVersion:
		return s.discover(ctx)
	default:
		if !slices.Contains(mcpVersions, s.Version) {
			return nil, fmt.Errorf("cannot initialize: agentauth does not speak MCP %q; it speaks %s", s.Version, strings.Join(clientVersions, ", "))
		}
		return s.initialize(ctx, clientName, version, s.Version)
	}
	res, err := s.discover(ctx)
	if err == nil || errors.As(err, new(*HTTPAuthError)) || ctx.Err() != nil {
		return res, err
	}
	return s.initialize(ctx, clientName, version, MCPProtocolVersion)
}

// discover sends server/discover as an MCP 2026-07-28 request; the
// server must list that revision among its supportedVersions.
func (s *HTTPSession) discover(ctx context.Context) (*MCPInitializeResult, error) {
	s.mu.Lock()
	s.protocolVersion = MCPStatelessVersion
	s.mu.Unlock()
	var raw json.RawMessage
	err := s.Call(ctx, MethodServerDiscover, nil, &raw)
	var res struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
		Instructions      string                     `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err == nil {
		if err = json.Unmarshal(raw, &res); err == nil && !slices.Contains(res.SupportedVersions, MCPStatelessVersion) {
			err = fmt.Errorf("the server does not list MCP %s among its versions", MCPStatelessVersion)
		}
	}
	if err != nil {
		s.mu.Lock()
		s.protocolVersion = ""
		s.mu.Unlock()
		return nil, err
	}
	out := &MCPInitializeResult{ProtocolVersion: MCPStatelessVersion, Capabilities: res.Capabilities, Instructions: res.Instructions, Raw: raw}
	_ = json.Unmarshal(res.Meta[MetaServerInfo], &out.ServerInfo) // optional
	return out, nil
}

// initialize runs the handshake of MCP 2025-11-25 and earlier, offering
// revision offer.
func (s *HTTPSession) initialize(ctx context.Context, clientName, version, offer string) (*MCPInitializeResult, error) {
	params := map[string]any{
		"protocolVersion": offer,
		"capabilities":    s.capabilities(),
		"clientInfo":      MCPImplementation{Name: clientName, Version: version},
	}
	var raw json.RawMessage
	if err := s.Call(ctx, MethodInitialize, params, &raw); err != nil {
		return nil, err
	}
	var res MCPInitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("cannot read the initialize result: %w", err)
	}
	res.Raw = raw
	if !slices.Contains(mcpVersions, res.ProtocolVersion) {
		return nil, fmt.Errorf("cannot initialize: the server speaks MCP %q; agentauth speaks %s", res.ProtocolVersion, strings.Join(clientVersions, ", "))
	}
	if s.Version != "" && res.ProtocolVersion != s.Version {
		return nil, fmt.Errorf("cannot initialize: the server answers MCP %q, not %s", res.ProtocolVersion, s.Version)
	}
	s.mu.Lock()
	s.protocolVersion = res.ProtocolVersion
	s.mu.Unlock()
	if err := s.Notify(ctx, methodInitialized, nil); err != nil {
		return nil, err
	}
	return &res, nil
}

// capabilities are the declared client capabilities, {} when none.
func (s *HTTPSession) capabilities() json.RawMessage {
	if s.Capabilities == nil {
		return json.RawMessage(`{}`)
	}
	return s.Capabilities
}

// stateless reports whether the session speaks MCP 2026-07-28.
func (s *HTTPSession) stateless() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protocolVersion == MCPStatelessVersion
}

// withMeta adds the MCP 2026-07-28 request _meta (protocol version, client
// info, Capabilities) to params, keeping any
// _meta the caller set. Params that are not an object are left alone.
func (s *HTTPSession) withMeta(params any) (any, error) {
	obj := map[string]json.RawMessage{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		if string(b) != "null" && json.Unmarshal(b, &obj) != nil {
			return params, nil
		}
	}
	meta := map[string]any{}
	if raw, ok := obj["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta) // not an object: replaced
	}
	s.mu.Lock()
	meta[MetaProtocolVersion] = MCPStatelessVersion
	meta[MetaClientInfo] = s.clientInfo
	s.mu.Unlock()
	meta[MetaClientCapabilities] = s.capabilities()
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = b
	return obj, nil
}

// Envelope returns request m with the MCP 2026-07-28 request _meta added
// (see withMeta): how agentauth proxy passes on a request of a client of
// an earlier revision to a 2026-07-28 server.
func (s *HTTPSession) Envelope(m *Message) (*Message, error) {
	var params any
	if len(m.Params) > 0 {
		params = m.Params
	}
	withMeta, err := s.withMeta(params)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(withMeta)
	if err != nil {
		return nil, err
	}
	out := *m
	out.Params = raw
	return &out, nil
}

// Call sends a request and waits for its response, reading an event stream
// until the response with the request's id. A JSON-RPC error comes back as
// *Error, a 401/403 as *HTTPAuthError, another non-2xx as *HTTPStatusError;
// result (may be nil) receives the result.
func (s *HTTPSession) Call(ctx context.Context, method string, params, result any) error {
	err := s.call(ctx, method, params, result, nil)
	var rpcErr *Error
	if method != methodToolsCall || !s.stateless() || !errors.As(err, &rpcErr) || rpcErr.Code != codeHeaderMismatch {
		return err
	}
	// The tool wants some arguments repeated in Mcp-Param-* headers (MCP
	// 2026-07-28 "Transports", Custom Headers from Tool Parameters): learn
	// which from its input schema and send the call again, once.
	headers, herr := s.paramHeaders(ctx, params)
	if herr != nil || len(headers) == 0 {
		return err
	}
	return s.call(ctx, method, params, result, headers)
}

// call sends one request with extra headers (may be nil).
func (s *HTTPSession) call(ctx context.Context, method string, params, result any, extra http.Header) error {
	id := NumberID(s.nextID.Add(1))
	var err error
	if s.stateless() {
		if params, err = s.withMeta(params); err != nil {
			return fmt.Errorf("cannot encode the %s request: %w", method, err)
		}
	}
	req, err := NewRequest(id, method, params)
	if err != nil {
		return fmt.Errorf("cannot encode the %s request: %w", method, err)
	}
	resp, err := s.post(ctx, req, extra)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted {
		return fmt.Errorf("the server accepted %s but sent no response (HTTP 202)", method)
	}
	if method == MethodInitialize {
		if err := s.keepSessionID(resp.Header.Get(headerSessionID)); err != nil {
			return err
		}
	}
	m, err := s.readResponse(ctx, resp, id)
	if err != nil {
		return fmt.Errorf("cannot read the response to %s: %w", method, err)
	}
	return m.decodeResult(method, result)
}

// Notify sends a notification; the server answers 202 Accepted.
func (s *HTTPSession) Notify(ctx context.Context, method string, params any) error {
	m, err := NewNotification(method, params)
	if err != nil {
		return fmt.Errorf("cannot encode the %s notification: %w", method, err)
	}
	resp, err := s.post(ctx, m, nil)
	if err != nil {
		return err
	}
	return drain(resp)
}

// Close ends the session with DELETE when the server assigned one; a server
// that does not allow clients to end sessions (405) is not an error.
func (s *HTTPSession) Close(ctx context.Context) error {
	if s.SessionID() == "" {
		return nil
	}
	resp, err := s.do(ctx, http.MethodDelete, nil, nil, nil)
	var se *HTTPStatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusMethodNotAllowed {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot end the MCP session: %w", err)
	}
	return drain(resp)
}

func (s *HTTPSession) keepSessionID(id string) error {
	if id == "" {
		return nil
	}
	// MCP 2025-11-25: visible ASCII (0x21–0x7E) only.
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return errors.New("cannot keep the session: the server's Mcp-Session-Id has characters outside visible ASCII")
		}
	}
	s.mu.Lock()
	s.sessionID = id
	s.mu.Unlock()
	return nil
}

// post sends one JSON-RPC message and returns a 2xx response, or the
// error its status means.
func (s *HTTPSession) post(ctx context.Context, m *Message, extra http.Header) (*http.Response, error) {
	body, err := Encode(m)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the message: %w", err)
	}
	return s.do(ctx, http.MethodPost, body, m, extra)
}

// do sends one HTTP request; m is the JSON-RPC message body (nil for
// DELETE), whose method and name MCP 2026-07-28 repeats in headers; extra
// headers (may be nil) are added.
func (s *HTTPSession) do(ctx context.Context, method string, body []byte, m *Message, extra http.Header) (*http.Response, error) {
	token, err := s.token(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot get a token for %s: %w", s.endpoint, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("cannot build the request: %w", err)
	}
	for k, vs := range s.Header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token) // RFC 6750 §2.1
	}
	s.mu.Lock()
	sessionID, version := s.sessionID, s.protocolVersion
	s.mu.Unlock()
	if sessionID != "" {
		req.Header.Set(headerSessionID, sessionID)
	}
	if version != "" {
		req.Header.Set(headerProtocolVersion, version)
	}
	if version == MCPStatelessVersion && m != nil && m.Method != "" {
		SetStandardHeaders(req.Header, m)
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the MCP server: %w", transportCause(err))
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		header := resp.Header.Values("WWW-Authenticate")
		challenge, _ := BearerChallenge(header)
		return nil, &HTTPAuthError{StatusCode: resp.StatusCode, Challenge: challenge, Header: header}
	case resp.StatusCode == http.StatusNotFound && sessionID != "":
		s.mu.Lock()
		if s.sessionID == sessionID {
			s.sessionID, s.protocolVersion = "", ""
		}
		s.mu.Unlock()
		return nil, ErrSessionExpired
	case version == MCPStatelessVersion && m != nil && m.IsRequest():
		// MCP 2026-07-28 answers a refused request with its JSON-RPC
		// error and a 4xx or 5xx status ("Transports").
		if e := errorBody(resp, m.ID, s.limit); e != nil {
			return nil, e
		}
	}
	return nil, &HTTPStatusError{StatusCode: resp.StatusCode, Excerpt: excerpt(resp.Body, token)}
}

// errorBody is the JSON-RPC error to request id that a non-2xx response
// carries as application/json, or nil (the body is then unread).
func errorBody(resp *http.Response, id ID, limit int64) *Error {
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/json" {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil || int64(len(data)) > limit {
		return nil
	}
	m, derr := Decode(data)
	if derr != nil || !answers(m, id) || m.Error == nil {
		return nil
	}
	return m.Error
}

// readResponse returns the response to id from a JSON body or an event
// stream, handing anything else the server sends first to OnMessage.
func (s *HTTPSession) readResponse(ctx context.Context, resp *http.Response, id ID) (*Message, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, s.limit+1))
		if err != nil {
			return nil, err
		}
		if int64(len(data)) > s.limit {
			return nil, &TooLargeError{Limit: s.limit}
		}
		m, err := decodeMessage(data)
		if err != nil {
			return nil, err
		}
		if !answers(m, id) {
			return nil, errors.New("the server's JSON body is not the response to this request")
		}
		return m, nil
	case "text/event-stream":
		events := NewSSEReader(resp.Body, s.limit)
		for {
			ev, err := events.Next()
			if err == io.EOF {
				return nil, errors.New("the server ended the event stream without a response")
			}
			if err != nil {
				return nil, err
			}
			if ev.Type != "message" || ev.Data == "" {
				continue // a priming event (id only) or another event type
			}
			m, err := decodeMessage([]byte(ev.Data))
			if err != nil {
				return nil, err
			}
			switch {
			case answers(m, id):
				return m, nil
			case m.IsRequest():
				if s.OnMessage != nil {
					s.OnMessage(m)
				}
				if err := s.answer(ctx, m); err != nil {
					return nil, err
				}
			case m.IsNotification():
				if s.OnMessage != nil {
					s.OnMessage(m)
				}
			}
		}
	}
	return nil, fmt.Errorf("unexpected content type %q", resp.Header.Get("Content-Type"))
}

// decodeMessage reads one JSON-RPC message from the server. Its failure is
// a plain error, not an *Error: the server did not send an error object.
func decodeMessage(data []byte) (*Message, error) {
	m, derr := Decode(data)
	if derr != nil {
		return nil, fmt.Errorf("the server sent an invalid JSON-RPC message: %s", derr.Message)
	}
	return m, nil
}

// answers reports whether m is the response to the request id, or an error
// with a null id: the server could not read the request (JSON-RPC 2.0 §5).
func answers(m *Message, id ID) bool {
	return m.IsResponse() && (m.ID.String() == id.String() || m.ID.IsZero() && m.Error != nil)
}

// answer replies to a request the server sent on a response stream.
func (s *HTTPSession) answer(ctx context.Context, req *Message) error {
	reply := NewErrorResponse(req.ID, Errorf(CodeMethodNotFound, "method %q not found", req.Method))
	switch {
	case req.Method == MethodPing:
		reply = &Message{JSONRPC: Version, ID: req.ID, Result: json.RawMessage("{}")}
	case s.HandleRequest != nil:
		res, rerr := s.HandleRequest(ctx, req)
		if rerr == nil {
			var err error
			if reply, err = NewResult(req.ID, res); err != nil {
				rerr = Errorf(CodeInternalError, "internal error: cannot encode the result")
			}
		}
		if rerr != nil {
			reply = NewErrorResponse(req.ID, rerr)
		}
	}
	resp, err := s.post(ctx, reply, nil)
	if err != nil {
		return fmt.Errorf("cannot answer the server's %s: %w", req.Method, err)
	}
	return drain(resp)
}

// drain reads and closes a body nobody needs, so the connection is reused.
func drain(resp *http.Response) error {
	_, err := io.Copy(io.Discard, io.LimitReader(resp.Body, DefaultMaxMessageSize))
	resp.Body.Close()
	return err
}

// excerpt returns up to 200 printable characters of a body, never the
// token: whole copies become "[token]", and a copy cut off by the read
// limit is dropped.
func excerpt(body io.Reader, token string) string {
	limit := 1024 + len(token)
	data, _ := io.ReadAll(io.LimitReader(body, int64(limit)))
	text := string(data)
	if token != "" {
		text = strings.ReplaceAll(text, token, "[token]")
		if len(data) == limit {
			for k := len(token) - 1; k > 0; k-- {
				if strings.HasSuffix(text, token[:k]) {
					text = text[:len(text)-k]
					break
				}
			}
		}
	}
	text = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) && r != utf8.RuneError {
			return r
		}
		return ' '
	}, text)
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > 200 {
		text = string(r[:200]) + "…"
	}
	return text
}
