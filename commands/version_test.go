package commands

import (
	"runtime/debug"
	"testing"
)

// TestBuildVersion: every kind of build reports one Go module version.
func TestBuildVersion(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "17b5d1e0b6461a2b3c4d"}, {Key: "vcs.time", Value: "2026-11-26T13:38:05Z"}}
	dirty := append(vcs[:2:2], debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	tests := []struct {
		name     string
		stamped  string
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{name: "GoReleaser stamps 1.2.3", stamped: "1.2.3", main: "v1.2.3", want: "v1.2.3"},
		{name: "stamped with its v", stamped: "v1.2.3", main: develVersion, want: "v1.2.3"},
		{name: "go install @v1.2.3", main: "v1.2.3", want: "v1.2.3"},
		{name: "go install . in a clone", main: "v0.0.0-20261126133805-17b5d1e0b646", settings: vcs, want: "v0.0.0-20261126133805-17b5d1e0b646"},
		{name: "go build, VCS recorded, no version", main: develVersion, settings: vcs, want: "v0.0.0-20261126133805-17b5d1e0b646"},
		{name: "go build, modified tree", main: develVersion, settings: dirty, want: "v0.0.0-20261126133805-17b5d1e0b646+dirty"},
		{name: "go run (no VCS information)", main: develVersion, want: develVersion},
		{name: "bad vcs.time", main: develVersion, settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "17b5d1e0b6461a2b3c4d"}, {Key: "vcs.time", Value: "soon"}}, want: develVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/agentauth/agentauth", Version: tt.main}, Settings: tt.settings}
			if got := buildVersion(tt.stamped, bi); got != tt.want {
				t.Errorf("buildVersion = %q, want %q", got, tt.want)
			}
		})
	}
	if got := buildVersion("", nil); got != develVersion {
		t.Errorf("no build information: %q, want %q", got, develVersion)
	}
}

func TestDescribeBuild(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.time", Value: "2026-11-22T21:00:00Z"}}
	tests := []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{name: "git checkout", settings: vcs, want: "v1 (commit 1a2b3c4d5e6f, 2026-11-22T21:00:00Z, go1.26.0)"},
		{name: "modified checkout", settings: append(vcs[:2:2], debug.BuildSetting{Key: "vcs.modified", Value: "true"}),
			want: "v1 (commit 1a2b3c4d5e6f, 2026-11-22T21:00:00Z, modified, go1.26.0)"},
		{name: "no VCS information", want: "v1 (go1.26.0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.0", Settings: tt.settings}
			if got := describeBuild("v1", bi); got != tt.want {
				t.Errorf("describeBuild = %q, want %q", got, tt.want)
			}
		})
	}
	if got := describeBuild("v1", nil); got != "v1 (no build information)" {
		t.Errorf("no build information: %q", got)
	}
}
