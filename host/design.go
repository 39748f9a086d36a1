package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentauth/agentauth/wire"
)

// setAuthToken is the deprecated token push: it authenticates the single
// required scheme (or the only scheme), and otherwise pushes "required".
func (s *session) setAuthToken(ctx context.Context, params json.RawMessage) {
	h := s.h
	h.log.Warn("setAuthToken is deprecated: use the authenticate request instead", "conn", s.id)
	var cands []*scheme
	for _, sc := range h.r().schemes {
		if sc.IsRequired() {
			cands = append(cands, sc)
		}
	}
	if len(cands) == 0 {
		cands = h.r().schemes
	}
	token, err := wire.ParseSetAuthToken(params)
	var chs []wire.Challenge
	switch {
	case len(cands) != 1:
		for _, sc := range cands {
			ch := h.challenge(sc, schemeStatus{})
			ch.ErrorDescription = fmt.Sprintf("setAuthToken cannot choose among %d schemes; use authenticate", len(cands))
			chs = append(chs, ch)
		}
	case err != nil || token == "":
		chs = []wire.Challenge{h.challenge(cands[0], schemeStatus{})}
	default:
		var g *Grant
		g, chs, err = s.accept(ctx, cands, token, nil, nil)
		if g != nil {
			return
		}
		if len(chs) == 0 {
			h.log.Warn("setAuthToken: cannot validate the token", "conn", s.id, "err", err)
			return
		}
	}
	for i, ch := range chs {
		s.push(h.r().byID[ch.SchemeID], wire.StateRequired, &chs[i])
	}
}

// initializeDesign checks the design dialect's protocolVersion (PROTOCOL.md
// "initialize"): only DesignProtocolVersion.
func initializeDesign(p wire.InitializeParams, res *initializeResult) *wire.Error {
	if p.ProtocolVersion != nil && *p.ProtocolVersion != wire.DesignProtocolVersion {
		supported := append([]string{fmt.Sprint(wire.DesignProtocolVersion)}, wire.PublishedProtocolVersions...)
		return wire.Errorf(wire.CodeUnsupportedVersion, "unsupported protocol version %d", *p.ProtocolVersion).
			WithData(wire.UnsupportedVersionData{SupportedVersions: supported})
	}
	res.ProtocolVersion = wire.DesignProtocolVersion
	return nil
}

// notifyAuthRequiredPush is the design dialect's auth state push,
// notify/authRequired, with the scheme's state and challenge.
func notifyAuthRequiredPush(sc *scheme, state string, ch *wire.Challenge) *wire.Message {
	if state == stateInvalid {
		state = wire.StateRequired
	}
	m, err := wire.NewNotification(wire.MethodNotifyAuthRequired, wire.NotifyAuthRequiredParams{SchemeID: sc.ID, Resource: sc.Resource, State: state, Challenge: ch})
	if err != nil {
		return nil
	}
	return m
}
