package store

import (
	"context"
	"errors"
)

// RegistrationKey is where the client registration agentauth uses with
// issuer is kept on its own, apart from any credential: a registration made
// for a login that then failed or was cancelled is reused by the next login
// instead of registering again (RFC 7591 registrations are not free for the
// server). Its Resource is empty, which no credential's is, and List never
// returns it.
func RegistrationKey(issuer string) Key { return Key{Issuer: issuer} }

// IsRegistration reports whether k is a RegistrationKey.
func (k Key) IsRegistration() bool { return k.Resource == "" && k.SchemeID == "" }

// PutRegistration keeps reg as the client registration for issuer.
func PutRegistration(ctx context.Context, s Store, issuer string, reg ClientRegistration) error {
	return s.Put(ctx, &Credential{Key: RegistrationKey(issuer), Client: reg})
}

// MarkRejected records that issuer refused the client clientID
// (invalid_client): neither the registration record nor any credential
// offers it to FindRegistration again.
func MarkRejected(ctx context.Context, s Store, issuer, clientID string) error {
	rec, err := s.Get(ctx, RegistrationKey(issuer))
	switch {
	case errors.Is(err, ErrNotFound):
		// The client came from a credential: the record remembers the
		// refusal until the next registration replaces it.
		rec = &Credential{Key: RegistrationKey(issuer), Client: ClientRegistration{ClientID: clientID}}
	case err != nil:
		return err
	case rec.Client.ClientID != clientID:
		return nil // already registered anew
	}
	rec.Client.Rejected = true
	return s.Put(ctx, rec)
}

// credentialsOnly drops registration records from a listing.
func credentialsOnly(cs []*Credential) []*Credential {
	out := cs[:0]
	for _, c := range cs {
		if !c.IsRegistration() {
			out = append(out, c)
		}
	}
	return out
}
