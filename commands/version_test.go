package commands

import (
	"runtime/debug"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.time", Value: "2026-11-22T21:00:00Z"}}
	tests := []struct {
		name     string
		version  string
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{name: "git checkout", version: "0.1.0-dev", main: "(devel)", settings: vcs,
			want: "0.1.0-dev (commit 1a2b3c4d5e6f, 2026-11-22T21:00:00Z, go1.26.0)"},
		{name: "modified checkout", version: "0.1.0-dev", main: "(devel)", settings: append(vcs[:2:2], debug.BuildSetting{Key: "vcs.modified", Value: "true"}),
			want: "0.1.0-dev (commit 1a2b3c4d5e6f, 2026-11-22T21:00:00Z, modified, go1.26.0)"},
		{name: "-buildvcs=false", version: "0.1.0-dev", main: "(devel)",
			want: "0.1.0-dev (module (devel), go1.26.0)"},
		{name: "go install @version", version: "0.1.0-dev", main: "v1.2.3",
			want: "v1.2.3 (go1.26.0)"},
		{name: "-ldflags version, module release", version: "1.2.3", main: "v1.2.3",
			want: "1.2.3 (module v1.2.3, go1.26.0)"},
		{name: "no module version", version: "0.1.0-dev",
			want: "0.1.0-dev (go1.26.0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/agentauth/agentauth", Version: tt.main}, Settings: tt.settings}
			if got := describeBuild(tt.version, bi); got != tt.want {
				t.Errorf("describeBuild = %q, want %q", got, tt.want)
			}
		})
	}
}
