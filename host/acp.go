package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentauth/agentauth/wire"
)

// ACPUpstreamMethodPrefix prefixes an upstream's ACP auth method id.
const ACPUpstreamMethodPrefix = "upstream:"

// acpUpstreamMethods are the ACP agent-type auth methods of the upstreams.
func (h *Host) acpUpstreamMethods() []wire.AuthMethod {
	if h.broker == nil {
		return nil
	}
	var out []wire.AuthMethod
	for _, u := range h.broker.Upstreams() {
		out = append(out, wire.AuthMethod{ID: ACPUpstreamMethodPrefix + u.ID, Name: u.Label, Type: "agent",
			Description: "The agent signs you in to " + u.Label + " at " + u.Host() + " through your browser"})
	}
	return out
}

// authenticateUpstream answers ACP authenticate {methodId: "upstream:ID"}
// (request reqID): {} at once when the connection's session is signed in
// to the upstream; while a sign-in is under way, {} once it completes,
// answered from a goroutine so that the connection keeps serving its other
// requests meanwhile (one such wait per connection and method, ended with
// the connection or when the sign-in expires); without a sign-in, or once
// it expired, -32000 with a new ask.
func (s *session) authenticateUpstream(ctx context.Context, reqID wire.ID, methodID string) {
	h := s.h
	answer := func(result any, rerr *wire.Error) {
		if rerr != nil && rerr.Code == wire.CodeAuthRequired {
			e := *rerr // ACP's AuthRequired, same data
			e.Code = wire.CodeACPAuthRequired
			rerr = &e
		}
		s.send(ctx, wire.Respond(reqID, result, rerr))
	}
	id := strings.TrimPrefix(methodID, ACPUpstreamMethodPrefix)
	if h.broker == nil || h.broker.Upstream(id) == nil {
		answer(nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: no auth method %s", wire.QuoteValue(methodID)))
		return
	}
	g := h.viewGrant(s.table().view(h.now()))
	if g == nil {
		rerr := h.gate(wire.MethodWhoami, s.table().view(h.now()), h.r().schemes)
		if rerr == nil {
			rerr = wire.Errorf(wire.CodeACPAuthRequired, "authentication required: sign in to this agent before %s", wire.QuoteValue(methodID))
		}
		answer(nil, rerr)
		return
	}
	sid := h.sessionOf(g)
	if _, err := h.broker.Token(ctx, sid, id); err == nil {
		answer(struct{}{}, nil)
		return
	}
	until, err := h.broker.Pending(ctx, sid, id)
	if err != nil {
		h.log.Error("cannot read the pending sign-ins", "err", err)
		answer(nil, wire.Errorf(wire.CodeInternalError, "internal error: cannot check the upstream sign-in now; try again later"))
		return
	}
	if until.IsZero() {
		answer(signedInOr(h.upstreamGateFor(ctx, g, id)))
		return
	}
	s.mu.Lock()
	busy := s.upstreamWaits[methodID]
	if !busy {
		if s.upstreamWaits == nil {
			s.upstreamWaits = map[string]bool{}
		}
		s.upstreamWaits[methodID] = true
		s.waits.Add(1)
	}
	s.mu.Unlock()
	if busy {
		answer(nil, wire.Errorf(wire.CodeInvalidRequest, "invalid request: an authenticate for %s already waits for the sign-in on this connection; wait for its answer", wire.QuoteValue(methodID)))
		return
	}
	go func() {
		defer s.waits.Done()
		err := h.broker.Wait(ctx, sid, id, until)
		s.mu.Lock()
		delete(s.upstreamWaits, methodID)
		s.mu.Unlock()
		switch {
		case err == nil:
			answer(struct{}{}, nil)
		case ctx.Err() == nil: // expired: a new ask; the connection's end needs no answer
			answer(signedInOr(h.upstreamGateFor(ctx, g, id)))
		}
	}()
}

// signedInOr is ACP authenticate's answer to an upstream gate: {} when it
// passed, else its error.
func signedInOr(rerr *wire.Error) (any, *wire.Error) {
	if rerr == nil {
		return struct{}{}, nil
	}
	return nil, rerr
}

// upstreamMethodID is the methodId of ACP authenticate params when it
// names an upstream ("upstream:ID"), else "".
func upstreamMethodID(params json.RawMessage) string {
	var p wire.AuthenticateParams
	if json.Unmarshal(params, &p) != nil || !strings.HasPrefix(p.MethodID, ACPUpstreamMethodPrefix) {
		return ""
	}
	return p.MethodID
}

// authenticateACP answers ACP's authenticate {methodId} for an agent-type
// method: the agent authenticates with the token the client handed it
// under _meta (ACPTokenMetaKey), with the grant the connection already
// holds, or with the credential agentauth's own store holds for the method
// (Options.StoredToken: the agent signs itself in); otherwise -32000 says
// what is missing.
func (s *session) authenticateACP(ctx context.Context, sc *scheme, p wire.AuthenticateParams) (any, *wire.Error) {
	h := s.h
	token, _ := p.Meta[wire.ACPTokenMetaKey].(string)
	if token == "" {
		token = p.Token
	}
	if token == "" && s.table().view(h.now())[sc.ID].grant != nil {
		return struct{}{}, nil
	}
	missing := fmt.Sprintf("obtain a token for %s from %s (agentauth login) and pass it in authenticate's _meta[%q]",
		sc.Resource, strings.Join(sc.AuthorizationServers, ", "), wire.ACPTokenMetaKey)
	if token == "" && h.storedToken != nil {
		t, err := h.storedToken(ctx, sc.ID, sc.Resource, sc.AuthorizationServers)
		if err != nil {
			missing = err.Error()
		}
		token = t
	}
	if token == "" {
		ch := h.challenge(sc, schemeStatus{})
		ch.ErrorDescription = fmt.Sprintf("no credential for method %s: %s", sc.ID, missing)
		e := *h.authRequired([]wire.Challenge{ch})
		e.Code, e.Message = wire.CodeACPAuthRequired, "Authentication required: "+ch.ErrorDescription
		return nil, &e
	}
	g, chs, err := s.accept(ctx, []*scheme{sc}, token, nil, nil)
	switch {
	case g != nil:
		return struct{}{}, nil // ACP AuthenticateResponse: {}
	case len(chs) > 0:
		e := *h.authRequired(chs)
		e.Code = wire.CodeACPAuthRequired
		return nil, &e
	default:
		return nil, wire.Errorf(wire.CodeInternalError, "internal error: cannot validate the token: %v", err)
	}
}

// initializeACP is ACP's initialize answer, its InitializeResponse
// (schema 1.7.0) and nothing else: an unsupported protocolVersion is
// answered with the latest one (the client decides whether to
// disconnect); it names the agent and lists an auth method per scheme and
// per upstream.
func (h *Host) initializeACP(fixed *initFixed) acpInitializeResult {
	res := acpInitializeResult{ProtocolVersion: wire.DesignProtocolVersion, AgentCapabilities: acpAgentCapabilities,
		AgentInfo: map[string]string{"name": "agentauth", "version": h.version}, AuthMethods: fixed.authMethodsJSON}
	if up := h.acpUpstreamMethods(); len(up) > 0 {
		res.AuthMethods = slices.Concat(fixed.authMethods, up)
	}
	return res
}

// acpInitializeResult is ACP's InitializeResponse (schema 1.7.0).
type acpInitializeResult struct {
	AgentCapabilities json.RawMessage   `json:"agentCapabilities"`
	AgentInfo         map[string]string `json:"agentInfo"`
	// AuthMethods is a []wire.AuthMethod or its JSON.
	AuthMethods     any `json:"authMethods"`
	ProtocolVersion int `json:"protocolVersion"`
}

// logoutACP answers ACP's logout: the connection's session signs out of
// every upstream and every scheme.
func (s *session) logoutACP(ctx context.Context) any {
	h := s.h
	h.logoutUpstreams(ctx, h.viewGrant(s.table().view(h.now())), "")
	for _, sc := range h.r().schemes {
		h.release(s.table(), sc, s)
	}
	h.log.Info("auth decision", "conn", s.id, "outcome", "logged out")
	return struct{}{} // ACP LogoutResponse: {}
}
