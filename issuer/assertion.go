package issuer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// AssertionTTL is the lifetime of an identity assertion.
const AssertionTTL = time.Minute

// Assertion signs an identity assertion: a short-lived RFC 9068 access
// token (§2.2 claims, typ at+jwt, this issuer's current key) for audience,
// with the subject, client id and scopes of a token serve accepted. A
// gateway gives it to a backend instead of the client's token: its
// audience is the backend's own, so it is of no use anywhere else (MCP
// "Security Best Practices", Token Passthrough). It is not recorded, so
// not revocable; it expires after AssertionTTL.
func (i *Issuer) Assertion(ctx context.Context, subject, clientID, audience string, scopes []string) (string, error) {
	now := i.clock(ctx)
	key, err := i.signer(ctx, now)
	if err != nil {
		return "", fmt.Errorf("cannot sign an identity assertion: %w", err)
	}
	return jwt.Signed(key.signer).Claims(accessClaims{
		Issuer:   i.opts.Issuer,
		Subject:  subject,
		Audience: audience,
		Expiry:   now.Add(AssertionTTL).Unix(),
		IssuedAt: now.Unix(),
		ID:       randomID(),
		ClientID: clientID,
		Scope:    strings.Join(scopes, " "),
	}).Serialize()
}
