package resource

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPreflightAllowsMCPHeaders(t *testing.T) {
	r := httptest.NewRequest(http.MethodOptions, "/mcp", nil)
	r.Header.Set("Origin", "https://app.example")
	r.Header.Set("Access-Control-Request-Method", "POST")
	r.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-param-region, Mcp-Param-X y, x-other")
	w := httptest.NewRecorder()
	Preflight(w, r, "GET, POST, DELETE")
	if w.Code != http.StatusNoContent {
		t.Fatalf("status %d, want 204", w.Code)
	}
	allow := w.Header().Get("Access-Control-Allow-Headers")
	for _, want := range []string{"Authorization", "Content-Type", "Mcp-Protocol-Version", "Mcp-Session-Id", "Last-Event-ID", "mcp-param-region"} {
		if !strings.Contains(allow, want) {
			t.Errorf("Access-Control-Allow-Headers %q lacks %s", allow, want)
		}
	}
	if strings.Contains(allow, "x-other") || strings.Contains(allow, "X y") {
		t.Errorf("Access-Control-Allow-Headers %q allows a header that is not MCP's", allow)
	}
	if got := w.Header().Get("Access-Control-Allow-Methods"); got != "GET, POST, DELETE" {
		t.Errorf("Access-Control-Allow-Methods %q", got)
	}
}
