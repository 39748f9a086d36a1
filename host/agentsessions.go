package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agentauth/agentauth/state"
	"github.com/agentauth/agentauth/wire"
)

// maxSessionsPerOwner bounds the live agent sessions of one owner.
const maxSessionsPerOwner = 100

// codeSessionLimit answers createSession over maxSessionsPerOwner: a
// server error of the implementation-defined range (JSON-RPC 2.0 §5.1).
const codeSessionLimit = -32000

// The records of agent sessions in the host's state.Store.
const (
	// kindAgentSessions holds, by owner, that owner's sessions in
	// creation order (at most maxSessionsPerOwner, so one record each).
	kindAgentSessions state.Kind = "agent_sessions"
	// kindAgentSessionSeq holds under agentSessionSeqKey the last session
	// number handed out, so that ids stay unique across restarts and
	// replicas.
	kindAgentSessionSeq state.Kind = "agent_session_seq"
	agentSessionSeqKey             = "last"
)

// agentSessions are the minimal agent host's sessions, each visible to its
// owner only, kept in the host's Store: they survive a restart of serve
// (with --data-dir or --database) and every replica sees them.
type agentSessions struct {
	store state.Store
}

type agentSession struct {
	ID        string `json:"sessionId"`
	Owner     string `json:"owner"`
	CreatedAt string `json:"createdAt"`
}

// errSessionStore answers a session method when the store fails.
var errSessionStore = wire.Errorf(wire.CodeInternalError, "internal error: the host cannot reach its state store; try again, and see the host's log")

func listTx(tx state.Tx, owner string) ([]agentSession, error) {
	b, err := tx.Get(kindAgentSessions, owner)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var all []agentSession
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("cannot decode the sessions of %q: %w", owner, err)
	}
	return all, nil
}

func putTx(tx state.Tx, owner string, all []agentSession) error {
	if len(all) == 0 {
		return tx.Delete(kindAgentSessions, owner)
	}
	b, err := json.Marshal(all)
	if err != nil {
		return err
	}
	return tx.Put(kindAgentSessions, owner, b, time.Time{})
}

// create adds a session for owner, named id (or a new sN when id is
// empty), or fails once owner holds maxSessionsPerOwner or already holds
// id.
func (a *agentSessions) create(ctx context.Context, owner, id string, now time.Time) (agentSession, *wire.Error, error) {
	var s agentSession
	full, exists := false, false
	err := a.store.Update(ctx, func(tx state.Tx) error {
		all, err := listTx(tx, owner)
		if err != nil {
			return err
		}
		if full = len(all) >= maxSessionsPerOwner; full {
			return nil
		}
		if exists = slices.ContainsFunc(all, func(s agentSession) bool { return s.ID == id }); exists {
			return nil
		}
		n := 0
		if b, err := tx.Get(kindAgentSessionSeq, agentSessionSeqKey); err == nil {
			n, _ = strconv.Atoi(string(b))
		} else if !errors.Is(err, state.ErrNotFound) {
			return err
		}
		n++
		if err := tx.Put(kindAgentSessionSeq, agentSessionSeqKey, []byte(strconv.Itoa(n)), time.Time{}); err != nil {
			return err
		}
		s = agentSession{ID: cmp.Or(id, fmt.Sprintf("s%d", n)), Owner: owner, CreatedAt: now.UTC().Format(time.RFC3339)}
		return putTx(tx, owner, append(all, s))
	})
	switch {
	case err != nil:
		return agentSession{}, errSessionStore, err
	case full:
		return agentSession{}, wire.Errorf(codeSessionLimit, "cannot create a session: %q already has %d live sessions, the most one user may hold; dispose of one first with disposeSession (listSessions lists them)",
			owner, maxSessionsPerOwner), nil
	case exists:
		return agentSession{}, wire.Errorf(codeSessionAlreadyExists, "cannot create session %s: it already exists; choose a new URI (ahp-session:/<uuid>)", id), nil
	}
	return s, nil, nil
}

func (a *agentSessions) list(ctx context.Context, owner string) ([]agentSession, error) {
	var all []agentSession
	err := a.store.View(ctx, func(tx state.Tx) error {
		var err error
		all, err = listTx(tx, owner)
		return err
	})
	if all == nil {
		all = []agentSession{}
	}
	return all, err
}

// dispose removes owner's session id and reports whether it existed.
func (a *agentSessions) dispose(ctx context.Context, owner, id string) (bool, error) {
	found := false
	err := a.store.Update(ctx, func(tx state.Tx) error {
		all, err := listTx(tx, owner)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(all, func(s agentSession) bool { return s.ID == id })
		if found = i >= 0; !found {
			return nil
		}
		return putTx(tx, owner, slices.Delete(all, i, i+1))
	})
	return found, err
}
