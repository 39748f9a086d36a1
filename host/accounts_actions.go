package host

import (
	"encoding/json"

	"github.com/agentauth/agentauth/wire"
)

// methodDispatchAction is AHP's client-dispatched action notification
// {channel, clientSeq, action} (types/common/commands.ts).
const methodDispatchAction = "dispatchAction"

// dispatchAction takes the client actions of ahp-accounts://
// (accounts-channel.md "Accounts state and actions"; isClientDispatchable
// in types/accounts.test.ts @ c0e5745a07bc39476050dbf0f706aaae134cae92):
// accounts/removed {id} releases every credential of the account in the
// table and retires it (an absent id is an accepted no-op);
// accounts/authAttemptRemoved {id} cancels a pending attempt of this
// connection (a terminal one, or another connection's, is rejected). Each
// is echoed as an action envelope with its origin {clientId, clientSeq},
// a rejected one with rejectionReason. Other channels' actions, and
// before 1.x, are ignored (a notification has no answer).
func (s *session) dispatchAction(params json.RawMessage) {
	var p struct {
		Channel   string `json:"channel"`
		ClientSeq int64  `json:"clientSeq"`
		Action    struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"action"`
	}
	if !s.isAHP1() || json.Unmarshal(params, &p) != nil || p.Channel != wire.AccountsChannel {
		s.h.log.Debug("dispatchAction ignored", "conn", s.id)
		return
	}
	h, t, b := s.h, s.table(), s.book()
	reason := ""
	var released []*scheme
	b.mu.Lock()
	acts := s.sweep(b)
	switch p.Action.Type {
	case "accounts/removed":
		if a := b.account(p.Action.ID); a != nil {
			t.mu.Lock()
			for _, r := range a.resources {
				for _, sc := range h.r().byResource(r) {
					if e := t.held.get(sc.ID); e != nil && identityOf(e.grant) == a.identity {
						released = append(released, sc)
					}
				}
			}
			t.mu.Unlock()
			b.accounts = deleteAccount(b.accounts, a)
			b.seq++
			b.retired[a.identity] = b.seq
			for _, r := range a.resources {
				b.selections[r]++
			}
		}
	case "accounts/authAttemptRemoved":
		switch at := b.attempt(p.Action.ID); {
		case at == nil:
		case at.owner != s:
			reason = "This attempt was begun by another connection"
		case at.status != attemptPending:
			reason = "The attempt is " + at.status + ": reconcile its outcome"
		default:
			b.attempts = deleteAttempt(b.attempts, at)
		}
	default:
		reason = "Unknown accounts action " + p.Action.Type
	}
	b.mu.Unlock()
	for _, sc := range released {
		h.release(t, sc, s)
		h.log.Info("auth decision", "conn", s.id, "scheme", sc.ID, "outcome", "account removed by the client", "account", p.Action.ID)
	}
	s.publish(acts)
	env := map[string]any{"channel": wire.AccountsChannel, "serverSeq": h.seq.Add(1),
		"origin": map[string]any{"clientId": s.clientIDOf(), "clientSeq": p.ClientSeq}, "action": map[string]any{"type": p.Action.Type, "id": p.Action.ID}}
	if reason != "" {
		env["rejectionReason"] = reason
	}
	if m, err := wire.NewNotification(MethodAction, env); err == nil {
		for _, c := range s.subscribers() {
			c.notify(m)
		}
	}
}

func deleteAccount(all []*hostAccount, a *hostAccount) []*hostAccount {
	out := all[:0]
	for _, x := range all {
		if x != a {
			out = append(out, x)
		}
	}
	return out
}

func deleteAttempt(all []*authAttempt, a *authAttempt) []*authAttempt {
	out := all[:0]
	for _, x := range all {
		if x != a {
			out = append(out, x)
		}
	}
	return out
}

// clientIDOf is the clientId the connection's initialize named.
func (s *session) clientIDOf() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientID
}
