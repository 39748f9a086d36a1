package commands

import (
	"bytes"
	"testing"
	"time"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/wire"
)

// TestPrintUpstreams prints the upstream sign-ins of status TARGET.
func TestPrintUpstreams(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	in59m, past := now.Add(59*time.Minute+30*time.Second), now.Add(-time.Minute)
	doc := &client.TargetStatusDoc{Upstreams: []wire.UpstreamStatus{
		{Upstream: "rally", Label: "Rally", Host: "rally1.rallydev.com", Authenticated: true, ExpiresAt: &in59m},
		{Upstream: "github", Label: "GitHub", Authenticated: false},
		{Upstream: "legacy", Authenticated: true},
		{Upstream: "old", Label: "Old\x1b[2J", Authenticated: true, ExpiresAt: &past},
	}}
	var b bytes.Buffer
	printUpstreams(doc, &b, Painter{}, now)
	want := `  Upstream sign-ins (kept by the server):
    ✓ Rally (rally1.rallydev.com): signed in, expires in 59m
    X GitHub: not signed in
    ✓ legacy: signed in
    ✓ Old[2J: signed in, token expired (the server refreshes it when needed)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
