package flows

import "github.com/agentauth/agentauth/wire"

// ChooseScopes picks the scopes to request (MCP authorization, scope
// selection): the challenge's scope (RFC 6750 §3) when it has one, else the
// resource's scopes_supported (RFC 9728 §2), else nothing; then every extra
// scope (--scope) is added. No default such as openid or profile is ever
// invented. Duplicates are dropped and the order is kept; each argument may
// hold space-separated scopes (RFC 6749 §3.3).
func ChooseScopes(challengeScope string, scopesSupported, extra []string) []string {
	base := wire.SplitScope(challengeScope)
	if len(base) == 0 {
		base = scopesSupported
	}
	var out []string
	seen := map[string]bool{}
	for _, group := range [][]string{base, extra} {
		for _, s := range group {
			for _, scope := range wire.SplitScope(s) {
				if !seen[scope] {
					seen[scope] = true
					out = append(out, scope)
				}
			}
		}
	}
	return out
}
