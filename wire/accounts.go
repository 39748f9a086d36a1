package wire

import "slices"

// AuthenticationCapabilities is AHP's InitializeResult.authentication.
type AuthenticationCapabilities struct {
	Flows []AuthFlow `json:"flows"`
}

// AuthFlow is one authentication flow a host admits ({kind}).
type AuthFlow struct {
	Kind string `json:"kind"`
}

// AuthFlowClientBrokered is the flow in which the client obtains the
// token and the host admits it to a host account (AHP
// accounts-channel.md "Brokered admission and token delivery").
const AuthFlowClientBrokered = "clientBrokered"

// ClientBrokered reports whether the host admits client-brokered
// credentials through authBegin and bound authenticate.
func (r *InitializeResult) ClientBrokered() bool {
	return r.Authentication != nil && slices.ContainsFunc(r.Authentication.Flows, func(f AuthFlow) bool { return f.Kind == AuthFlowClientBrokered })
}

// TakesRevocation reports whether the host advertises accountRevocation
// (an object), so that a client may send auth/revoked.
func (r *InitializeResult) TakesRevocation() bool {
	return len(r.AccountRevocation) > 0 && r.AccountRevocation[0] == '{'
}

// ProviderOf is the first agent of the root snapshot that names
// resource (AHP AgentInfo.provider): the consumer of a client-brokered
// admission.
func (r *InitializeResult) ProviderOf(resource string) string {
	for _, snap := range r.Snapshots {
		for _, a := range snap.State.Agents {
			if slices.ContainsFunc(a.ProtectedResources, func(p ProtectedResourceMetadata) bool { return p.Resource == resource }) {
				return a.Provider
			}
		}
	}
	return ""
}

// AccountsChannel is the AHP accounts channel's URI.
const AccountsChannel = "ahp-accounts://"

// AHP 1.x account methods: authBegin (a request on AccountsChannel) and
// the client notification auth/revoked.
const (
	MethodAuthBegin   = "authBegin"
	MethodAuthRevoked = "auth/revoked"
)

// AuthenticationAccount names the account a token belongs to: the
// authority that issued it and the account's id there (AHP
// types/authentication.test.ts, AuthenticationAccount).
type AuthenticationAccount struct {
	Authority string `json:"authority"`
	ID        string `json:"id"`
}

// AuthenticationBinding binds a delivered token to an admission attempt
// ({kind: "attempt", attemptId}) or a host account ({kind: "account",
// accountId}) (AHP accounts-channel.md).
type AuthenticationBinding struct {
	Kind      string `json:"kind"`
	AttemptID string `json:"attemptId,omitempty"`
	AccountID string `json:"accountId,omitempty"`
}

// AuthRevokedParams is the client notification auth/revoked.
type AuthRevokedParams struct {
	Channel  string                `json:"channel"`
	Resource string                `json:"resource"`
	Account  AuthenticationAccount `json:"account"`
}

// AuthBeginParams and AuthBeginResult are authBegin's (AHP
// accounts-channel.md: target {consumer}, flows; the host answers the
// flow and an attempt id).
type AuthBeginParams struct {
	Channel string          `json:"channel"`
	Target  AuthBeginTarget `json:"target"`
	Flows   []AuthFlow      `json:"flows"`
}

// AuthBeginTarget names the consumer an admission is for.
type AuthBeginTarget struct {
	Consumer AccountConsumer `json:"consumer"`
}

// AccountConsumer is an agent's (provider, resource) consumer.
type AccountConsumer struct {
	Kind     string `json:"kind"`
	Provider string `json:"provider"`
	Resource string `json:"resource"`
}

// AuthBeginResult is authBegin's answer.
type AuthBeginResult struct {
	Flow      string `json:"flow"`
	AttemptID string `json:"attemptId"`
}
