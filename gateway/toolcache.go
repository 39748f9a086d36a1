package gateway

import (
	"sync"
	"time"

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

// toolSchema is what the gateway learned of one listed tool's
// inputSchema.
type toolSchema struct {
	res *jsonschema.Resolved // nil exactly when refusal is set
	// refusal says why serve cannot check the tool's arguments.
	refusal string
	// numeric is whether the schema compares numbers or tells integers
	// apart (bounds, multipleOf, enum, const, type integer), where the
	// float64 jsonschema-go decodes arguments into must hold each
	// argument's number exactly (inexactNumber).
	numeric bool
	// flat, when not nil, accepts matching arguments undecoded.
	flat *flatSchema
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
