package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// Deny by default: a tools/call reaches the backend only for a name the
// backend listed, matched exactly. Policies (toolScopes, toolUpstreams)
// name listed tools; a name that differs from a listed one in case,
// blanks or anything else matches no policy, so a backend that matched
// names loosely would run a protected tool unchecked. Such a call is
// refused before the backend sees it, as an MCP server refuses a tool it
// does not have (MCP 2025-11-25 "Tools", Error Handling: -32602).

// listedTool checks that the backend listed a tool named name, listing
// its tools itself (all pages, up to maxListPages) when the name is not
// known yet and serve did not read the whole list within relistAfter: the
// client may call a tool it did not list, or one added since
// (notifications/tools/list_changed). It refuses the call, and
// reports false, when the name is not listed, or when the list could not
// be read or held whole (more than maxTools tools or maxListPages pages,
// a list over the message bound, a failed tools/list): a check serve
// cannot make is a refusal, never a pass.
func (k *call) listedTool(w http.ResponseWriter, r *http.Request, cn conn, out http.Header, name string) bool {
	m := k.m
	if _, ok := m.tools.get(name); ok {
		return true
	}
	if m.tools.listedSince(time.Now()) {
		k.refuseUnlisted(w, name)
		return false
	}
	whole, err := m.listAll(r.Context(), cn, out, k.stateless)
	if _, ok := m.tools.get(name); ok {
		return true
	}
	switch {
	case err != nil:
		m.g.log.Warn("cannot list the backend's tools to check a call", "backend", m.b.Name, "err", err)
		k.refuse(w, k.status(http.StatusBadGateway), wire.Errorf(wire.CodeInternalError,
			"internal error: cannot check tool %s: backend %s's tools/list failed (%v); serve forwards no call it cannot check", wire.QuoteValue(name), m.b.Name, err), "tools/list failed")
	case !whole || m.tools.overflowed():
		k.refuse(w, k.status(http.StatusBadRequest), wire.Errorf(wire.CodeInvalidParams,
			"invalid params: unknown tool %s: backend %s lists more tools than serve holds (%d tools, %d pages of tools/list) and did not list this one among them",
			wire.QuoteValue(name), m.b.Name, maxTools, maxListPages), "unlisted tool")
	default:
		k.refuseUnlisted(w, name)
	}
	return false
}

// refuseUnlisted refuses a call of a tool the backend does not list.
func (k *call) refuseUnlisted(w http.ResponseWriter, name string) {
	k.refuse(w, k.status(http.StatusBadRequest), wire.Errorf(wire.CodeInvalidParams,
		"invalid params: unknown tool %s: backend %s does not list it in tools/list (tool names are matched exactly)", wire.QuoteValue(name), k.m.b.Name), "unlisted tool")
}

// listAll asks the backend for its tools on the caller's conn, every page
// up to maxListPages, teaching the tool cache; whole reports whether the
// last page had no nextCursor.
func (m *Mount) listAll(ctx context.Context, cn conn, out http.Header, stateless bool) (whole bool, err error) {
	h := out.Clone()
	h.Del("Mcp-Name")
	for name := range h {
		if strings.HasPrefix(name, "Mcp-Param-") {
			h.Del(name)
		}
	}
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Content-Type", "application/json")
	if stateless {
		h.Set("Mcp-Method", methodToolsList)
	}
	cursor := ""
	for range maxListPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		if stateless {
			params["_meta"] = map[string]any{wire.MetaProtocolVersion: statelessVersion,
				wire.MetaClientCapabilities: map[string]any{}}
		}
		result, err := m.roundTrip(ctx, cn, methodToolsList, params, h)
		if err != nil {
			return false, err
		}
		if cursor = m.learnTools(result); cursor == "" {
			m.tools.listedWhole(time.Now())
			return true, nil
		}
	}
	return false, nil
}

// learnTools teaches the tool cache a tools/list result and logs each tool
// whose schema it newly refuses; it returns the result's nextCursor.
func (m *Mount) learnTools(result json.RawMessage) string {
	cursor, refused := m.tools.learn(result)
	for _, tool := range slices.Sorted(maps.Keys(refused)) {
		m.g.log.Warn("the backend's tool cannot be called: its inputSchema cannot be checked", "backend", m.b.Name, "tool", tool, "reason", refused[tool])
	}
	return cursor
}
