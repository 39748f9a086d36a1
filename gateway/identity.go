package gateway

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentauth/agentauth/wire"
)

// The backend's own token for a call: an identity assertion serve mints,
// or a token exchanged for the caller's (exchange.go).

// identify puts the caller's identity assertion in out when the backend
// takes one, or answers the failure.
func (m *Mount) identify(w http.ResponseWriter, r *http.Request, k *call, out http.Header) bool {
	if m.b.Identity == "" {
		return true
	}
	if m.b.Identity == IdentityExchange {
		return m.exchangeIdentity(w, r, k, out)
	}
	a, err := m.g.assert(r.Context(), k.c.Subject(), k.c.ClientID(), m.b.URL, k.c.Scopes())
	if err != nil {
		m.g.log.Error("cannot mint an identity assertion", "backend", m.b.Name, "err", err)
		k.refuse(w, http.StatusServiceUnavailable, wire.Errorf(wire.CodeInternalError, "internal error: cannot sign the identity assertion for backend %s now; try again later", m.b.Name), "no assertion")
		return false
	}
	out.Set("Authorization", "Bearer "+a)
	k.secrets = append(k.secrets, a)
	return true
}

// bearerToken is the caller's token in the Authorization header (Bearer or
// DPoP), to be scrubbed from every answer.
func bearerToken(r *http.Request) string {
	v := r.Header.Get("Authorization")
	if i := strings.IndexByte(v, ' '); i > 0 {
		return strings.TrimSpace(v[i+1:])
	}
	return ""
}

// exchangeIdentity puts the backend's exchanged token in out, or answers
// the failure: HTTP 502 with a JSON-RPC error naming the backend, the
// authorization server and its error code (never a token), audited.
func (m *Mount) exchangeIdentity(w http.ResponseWriter, r *http.Request, k *call, out http.Header) bool {
	tok, err := m.x.token(r.Context(), k.c, bearerToken(r))
	if err != nil {
		var xe *exchangeError
		if !errors.As(err, &xe) {
			xe = &exchangeError{backend: m.b.Name, issuer: m.x.cfg.Issuer, reason: "token exchange failed", err: err}
		}
		// The log has the server's description too (error_description,
		// RFC 6749 §5.2); the caller gets the code.
		m.g.log.Warn("token exchange failed", "backend", m.b.Name, "issuer", m.x.cfg.Issuer, "err", xe.err)
		k.decision, k.reason = "error", xe.reason
		if xe.denied {
			k.decision = "denied"
		}
		rerr := wire.Errorf(wire.CodeInternalError, "internal error: %v", xe)
		k.errCode = rerr.Code
		writeError(w, http.StatusBadGateway, k.msg.ID, rerr)
		if k.msg.IsRequest() {
			k.audit()
		}
		return false
	}
	out.Set("Authorization", "Bearer "+tok)
	k.secrets = append(k.secrets, tok)
	return true
}
