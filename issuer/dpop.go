package issuer

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// DPoP at the token endpoint (RFC 9449 §5, §8).
const (
	// DPoPWindow bounds |now - iat| of a proof.
	DPoPWindow = 60 * time.Second
	// dpopNoncePeriod is how long a nonce is current; the previous one is
	// accepted too, so a nonce lives between one and two periods.
	dpopNoncePeriod = 5 * time.Minute
)

// dpopNonce is the token endpoint's nonce for the period of now (§8): an
// HMAC of the period under the current signing key, so that every replica
// sharing the state gives the same one and nobody can guess the next.
func dpopNonce(key *signingKey, now time.Time) string {
	mac := hmac.New(sha256.New, key.key.D.Bytes())
	mac.Write([]byte("dpop-nonce " + strconv.FormatInt(now.Unix()/int64(dpopNoncePeriod/time.Second), 10)))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
}

// dpopError is a refused proof (§5: 400 invalid_dpop_proof) or a request
// for a nonce (§8: 400 use_dpop_nonce with DPoP-Nonce).
func dpopError(code, desc, nonce string) *oauthError {
	e := badRequest(code, desc)
	e.nonce = nonce
	return e
}

// checkTokenDPoP checks the DPoP proof of a token request, if any, and
// returns the thumbprint of its key ("" without a proof): one proof, for
// POST to this token endpoint, fresh, never seen, with the current nonce.
func (i *Issuer) checkTokenDPoP(r *http.Request, is *issuing) *oauthError {
	proofs := r.Header.Values(wire.HeaderDPoP)
	if len(proofs) == 0 {
		return nil
	}
	nonce := dpopNonce(is.key, is.now)
	if len(proofs) > 1 {
		return dpopError(wire.ErrInvalidDPoPProof, "send one DPoP proof", nonce)
	}
	p, err := wire.CheckDPoPProof(proofs[0], wire.DPoPCheck{Method: http.MethodPost, URI: i.opts.Issuer + pathToken, Now: is.now, Window: DPoPWindow})
	if err != nil {
		return dpopError(wire.ErrInvalidDPoPProof, err.Error(), nonce)
	}
	if p.Nonce == "" || p.Nonce != nonce && p.Nonce != dpopNonce(is.key, is.now.Add(-dpopNoncePeriod)) {
		return dpopError(wire.ErrUseDPoPNonce, "the DPoP proof must carry the nonce in the DPoP-Nonce header", nonce)
	}
	// The proof's id is kept, per key, until it leaves the window
	// (§11.1), in the store the replicas share.
	var refused *oauthError
	err = i.store.Update(r.Context(), func(tx state.Tx) (err error) {
		refused, err = rememberTx(tx, kindDPoPJTI, i.opts.Limits.DPoPProofs, p.JKT, p.JTI, p.Expires, is.now,
			dpopError(wire.ErrInvalidDPoPProof, "the DPoP proof was already used (jti)", nonce), "DPoP proofs")
		return err
	})
	if err != nil {
		return i.storeFailed(err)
	}
	if refused != nil {
		return refused
	}
	is.jkt, is.nonce = p.JKT, nonce
	return nil
}
