package host

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/agentauth/agentauth/wire"
)

// MethodAction is the published dialect's action notification; its params
// are an action envelope (AHP root-channel.md, "Methods and events").
const MethodAction = "action"

// Reload puts a new resolved config in force: gated calls follow it at
// once, and every connection is told what changed: in the design dialect a
// notify/authRequired "required" per added or changed required scheme the
// connection holds no grant for, in the published dialect a
// root/agentsChanged action to the root channel's subscribers. The
// resource cannot change while the host runs; such a config is refused and
// the running one stays in force.
func (h *Host) Reload(cfg *Config) error {
	if cfg == nil {
		return errors.New("cannot reload: no config")
	}
	cfg.schemeResources()
	if err := cfg.checkResolved(); err != nil {
		return fmt.Errorf("cannot reload: %w", err)
	}
	if cfg.Resource != h.cfg.Resource {
		return fmt.Errorf("cannot reload: the resource changed from %s to %s; restart serve to serve another resource", h.cfg.Resource, cfg.Resource)
	}
	old := h.r()
	next := h.build(cfg, old)
	var changed []*scheme
	for _, sc := range next.schemes {
		if old.byID[sc.ID] != sc {
			changed = append(changed, sc)
		}
	}
	removed := 0
	for _, sc := range old.schemes {
		if next.byID[sc.ID] == nil {
			removed++
		}
	}
	if len(changed) == 0 && removed == 0 && reflect.DeepEqual(old.cfg.MethodScopes, cfg.MethodScopes) {
		h.log.Info("config reloaded", "changed", 0)
		return nil
	}
	h.reqs.Store(next)
	seq := h.seq.Add(1)
	h.log.Info("config reloaded", "changed", len(changed), "removed", removed, "schemes", len(next.schemes))
	conns := h.connections()
	action, err := wire.NewNotification(MethodAction, map[string]any{"channel": wire.RootChannel, "serverSeq": seq,
		"action": map[string]any{"type": "root/agentsChanged", "agents": h.rootSnapshot().State.Agents}})
	if err != nil {
		return fmt.Errorf("cannot reload: %w", err)
	}
	for _, s := range conns {
		s.mu.Lock()
		ok, d, root := s.initialized, s.dialect, s.rootSubscribed
		s.mu.Unlock()
		switch {
		case !ok:
		case d == wire.DialectPublished:
			if root {
				s.notify(action)
			}
		default:
			v := s.table().view(h.now())
			for _, sc := range changed {
				if st := v[sc.ID]; sc.IsRequired() && st.grant == nil {
					ch := h.challenge(sc, st)
					s.push(sc, wire.StateRequired, &ch)
				}
			}
		}
	}
	return nil
}
