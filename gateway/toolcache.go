package gateway

import (
	"encoding/json"
	"sync"
	"time"
)

// What the gateway learned of a backend's tools: their resolved
// inputSchema and the arguments they carry in Mcp-Param headers.

// maxTools bounds the schemas kept per backend; maxListPages the pages of
// tools/list the gateway reads itself.
const (
	maxTools     = 4096
	maxListPages = 16
)

// relistAfter is how long a whole tools/list serve read itself answers
// for a name it lacks: a caller naming unknown tools makes the backend
// list its tools at most once in this time, not once a call. A client
// that saw tools/list_changed lists again itself, which teaches the
// cache at once.
const relistAfter = 5 * time.Second

// toolCache holds the checked inputSchema of each tool a backend listed
// (checkSchema).
type toolCache struct {
	mu    sync.RWMutex
	tools map[string]toolSchema
	// headers are, by tool, the arguments MCP 2026-07-28 clients repeat
	// in Mcp-Param-NAME (x-mcp-header of a property: argument to NAME).
	headers map[string]map[string]string
	// overflow: a listing named more tools than maxTools; the names past
	// the bound are not held, and calls to them are refused (names.go).
	overflow bool
	// listed is when serve last read the whole list itself (listAll).
	listed time.Time
}

func newToolCache() *toolCache {
	return &toolCache{tools: map[string]toolSchema{}, headers: map[string]map[string]string{}}
}

// headerParams are a tool's x-mcp-header arguments (nil: none, or unknown).
func (tc *toolCache) headerParams(name string) map[string]string {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	return tc.headers[name]
}

// learn reads the schemas of a tools/list result and returns its
// nextCursor, and the tools whose schema it newly refuses, with the
// reasons (checkSchema).
func (tc *toolCache) learn(result json.RawMessage) (cursor string, refused map[string]string) {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if json.Unmarshal(result, &r) != nil {
		return "", nil
	}
	// The schemas are checked outside the lock, which calls need.
	tc.mu.RLock()
	held, keep := len(tc.tools), r.Tools[:0]
	for _, t := range r.Tools {
		if _, ok := tc.tools[t.Name]; !ok {
			if held >= maxTools {
				continue
			}
			held++
		}
		keep = append(keep, t)
	}
	tc.mu.RUnlock()
	checked := make([]toolSchema, len(keep))
	headers := make([]map[string]string, len(keep))
	for i, t := range keep {
		if checked[i] = checkSchema(t.InputSchema); checked[i].refusal == "" {
			headers[i] = headerArguments(t.InputSchema)
		}
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if len(keep) < len(r.Tools) {
		tc.overflow = true
	}
	for i, t := range keep {
		prev, ok := tc.tools[t.Name]
		if !ok && len(tc.tools) >= maxTools {
			tc.overflow = true
			continue
		}
		if ts := checked[i]; ts.refusal != "" && prev.refusal != ts.refusal {
			if refused == nil {
				refused = map[string]string{}
			}
			refused[t.Name] = ts.refusal
		}
		tc.tools[t.Name] = checked[i]
		delete(tc.headers, t.Name)
		if headers[i] != nil {
			tc.headers[t.Name] = headers[i]
		}
	}
	return r.NextCursor, refused
}

// overflowed reports whether a listing named more tools than are held.
func (tc *toolCache) overflowed() bool {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	return tc.overflow
}

func (tc *toolCache) get(name string) (toolSchema, bool) {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	r, ok := tc.tools[name]
	return r, ok
}

// headerArguments are the arguments of an inputSchema that MCP 2026-07-28
// clients repeat in Mcp-Param-NAME (x-mcp-header of a property: argument
// to NAME); nil for none.
func headerArguments(schema json.RawMessage) map[string]string {
	var props struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &props) != nil {
		return nil
	}
	var h map[string]string
	for arg, p := range props.Properties {
		if p.Header != "" {
			if h == nil {
				h = map[string]string{}
			}
			h[arg] = p.Header
		}
	}
	return h
}

// listedWhole notes that serve read the whole list just now.
func (tc *toolCache) listedWhole(now time.Time) {
	tc.mu.Lock()
	tc.listed = now
	tc.mu.Unlock()
}

// listedSince reports whether serve read the whole list itself within
// relistAfter of now.
func (tc *toolCache) listedSince(now time.Time) bool {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	return !tc.listed.IsZero() && now.Sub(tc.listed) < relistAfter
}
