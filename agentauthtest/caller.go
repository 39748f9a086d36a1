package agentauthtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentauth/agentauth/resource"
)

// Caller is whom the gateway vouches for in a request it forwards to
// your handler (WithHandler).
type Caller struct {
	Subject  string
	ClientID string
	Scopes   []string
}

// Caller checks the identity assertion the gateway put on a request it
// forwarded to your handler, from the request's header (in a Go SDK tool
// handler, req.Extra.Header): Authorization: Bearer with an RFC 9068 JWT
// of Server.Issuer, signed with one of its keys, whose audience is your
// handler's URL, not expired; and returns whom it names. An error means
// the request did not come through the gateway. As your handler is made
// before the Server, reach the Server through a variable the test sets
// once NewServer returns (the handler is called only later).
func (s *Server) Caller(ctx context.Context, h http.Header) (*Caller, error) {
	if s.backend == "" {
		return nil, errors.New("agentauthtest: Caller checks requests to a WithHandler handler, and this server has none")
	}
	token, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return nil, errors.New("the request carries no identity assertion (Authorization: Bearer)")
	}
	md, err := s.metadata(ctx)
	if err != nil {
		return nil, err
	}
	v := resource.NewValidator(resource.Scheme{ID: "gateway", Resource: s.backend, AuthorizationServers: []string{s.Issuer},
		Validation: resource.Validation{Type: resource.ValidationJWT, JWKSURI: md.JWKSURI}}, s.hc, time.Now)
	g, err := v.Validate(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("the identity assertion is not the gateway's: %w", err)
	}
	return &Caller{Subject: g.Subject, ClientID: g.ClientID, Scopes: g.Scopes}, nil
}
