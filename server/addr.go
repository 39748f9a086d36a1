package server

// Origin is the listener's origin (http://HOST:PORT, https with TLS),
// known once New returns: with Listen "127.0.0.1:0", the port it got.
// Empty when nothing listens (Options.Stdio alone).
func (s *Server) Origin() string {
	if s.ln == nil {
		return ""
	}
	return s.origin
}

// Resource is the resource identifier the server's tokens are for (RFC
// 8707): the config's, Options.Resource, or ORIGIN/mcp.
func (s *Server) Resource() string { return s.host.Resource() }
