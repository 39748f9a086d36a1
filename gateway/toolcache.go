package gateway

import (
	"encoding/json"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// What the gateway learned of a backend's tools: their resolved
// inputSchema and the arguments they carry in Mcp-Param headers.

// maxTools bounds the schemas kept per backend; maxListPages the pages of
// tools/list the gateway reads itself.
const (
	maxTools     = 4096
	maxListPages = 16
)

// toolCache holds the resolved inputSchema of each tool a backend listed.
type toolCache struct {
	mu    sync.RWMutex
	tools map[string]*jsonschema.Resolved // nil: the schema could not be resolved
	// headers are, by tool, the arguments MCP 2026-07-28 clients repeat
	// in Mcp-Param-NAME (x-mcp-header of a property: argument to NAME).
	headers map[string]map[string]string
	// overflow: a listing named more tools than maxTools; the names past
	// the bound are not held, and calls to them are refused (names.go).
	overflow bool
}

func newToolCache() *toolCache {
	return &toolCache{tools: map[string]*jsonschema.Resolved{}, headers: map[string]map[string]string{}}
}

// headerParams are a tool's x-mcp-header arguments (nil: none, or unknown).
func (tc *toolCache) headerParams(name string) map[string]string {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	return tc.headers[name]
}

// learn reads the schemas of a tools/list result and returns its nextCursor.
func (tc *toolCache) learn(result json.RawMessage) string {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if json.Unmarshal(result, &r) != nil {
		return ""
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, t := range r.Tools {
		if _, ok := tc.tools[t.Name]; !ok && len(tc.tools) >= maxTools {
			tc.overflow = true
			continue
		}
		var s jsonschema.Schema
		var res *jsonschema.Resolved
		if json.Unmarshal(t.InputSchema, &s) == nil {
			res, _ = s.Resolve(nil) // remote $refs are not fetched: such a schema is not checked
		}
		tc.tools[t.Name] = res
		var props struct {
			Properties map[string]struct {
				Header string `json:"x-mcp-header"`
			} `json:"properties"`
		}
		delete(tc.headers, t.Name)
		if json.Unmarshal(t.InputSchema, &props) == nil {
			for arg, p := range props.Properties {
				if p.Header != "" {
					if tc.headers[t.Name] == nil {
						tc.headers[t.Name] = map[string]string{}
					}
					tc.headers[t.Name][arg] = p.Header
				}
			}
		}
	}
	return r.NextCursor
}

// overflowed reports whether a listing named more tools than are held.
func (tc *toolCache) overflowed() bool {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	return tc.overflow
}

func (tc *toolCache) get(name string) (*jsonschema.Resolved, bool) {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	r, ok := tc.tools[name]
	return r, ok
}
