package gateway

import (
	"context"

	"github.com/agentauth/agentauth/broker"
)

// What serve hands the gateway about a caller and its broker.

// Caller is what serve established about the request's token: the
// gateway's only view of the caller's grant. It never holds the token.
type Caller interface {
	Subject() string
	ClientID() string
	Scopes() []string
	// Issuer is the token's issuer: a sign-in link of the embedded
	// issuer's callers is bound to them (broker.Principal).
	Issuer() string
}

// Broker is what the gateway needs of serve's broker (package broker):
// the caller's upstream tokens and, when one is missing, a sign-in to ask
// for.
type Broker interface {
	Session(subject, clientID string) string
	Token(ctx context.Context, sid, upstream string) (string, error)
	Ask(ctx context.Context, who broker.Principal, upstream string) (*broker.Ask, error)
}
