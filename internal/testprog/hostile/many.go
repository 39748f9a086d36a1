package hostile

import (
	"encoding/json"
	"fmt"
)

// List modes: how many tools the backend lists, and in how many pages.
func init() {
	// many-tools: 100,000 tools more (tool_000000 …), after the base
	// tools, in pages of 1,000 (nextCursor).
	modes["many-tools"] = func(b *backend) {
		obj := json.RawMessage(`{"type":"object"}`)
		for i := range 100_000 {
			b.tools = append(b.tools, tool{Name: fmt.Sprintf("tool_%06d", i), InputSchema: obj})
		}
		b.pageSize = 1000
	}
	// one-page: every tool in one tools/list page, however many.
	modes["one-page"] = func(b *backend) { b.pageSize = 0 }
}
