package commands

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
)

// develVersion is the version of a build that knows none: Go's own word
// for it (debug.BuildInfo's Main.Version of a go run or go test build).
const develVersion = "(devel)"

// serverVersion is agentauth's version, one answer wherever it is shown:
// --version (first word), serve's landing page, MCP serverInfo, ACP
// clientInfo and serve's start log. It is worked out once (buildVersion).
var serverVersion = sync.OnceValue(func() string { return buildVersion(Version, buildInfo()) })

// buildInfo is the binary's build information, read once (nil when the
// binary has none).
var buildInfo = sync.OnceValue(func() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
})

// buildVersion is the version of the build bi describes, written as a Go
// module version (https://go.dev/ref/mod#versions), first of:
//
//   - stamped, the release build's -X …commands.Version, with a leading
//     "v" added where the stamp has none ("1.2.3" is v1.2.3);
//   - the main module's version Go records: the tag for go install
//     …@v1.2.3, and for go install . or go build in a git checkout the
//     pseudo-version v0.0.0-20261126133805-17b5d1e0b646 ("+dirty" when
//     the tree has changes);
//   - the same pseudo-version made from vcs.revision, vcs.time and
//     vcs.modified where Go recorded those and no version;
//   - "(devel)" where the build recorded nothing: go run, go test and
//     -buildvcs=false builds carry no VCS information.
func buildVersion(stamped string, bi *debug.BuildInfo) string {
	if stamped != "" {
		if !strings.HasPrefix(stamped, "v") {
			stamped = "v" + stamped
		}
		return stamped
	}
	if bi == nil {
		return develVersion
	}
	if mv := bi.Main.Version; mv != "" && mv != develVersion {
		return mv
	}
	rev, when, modified := vcsInfo(bi)
	t, err := time.Parse(time.RFC3339, when)
	if len(rev) < 12 || err != nil {
		return develVersion
	}
	// A pseudo-version with no earlier tag (https://go.dev/ref/mod#pseudo-versions):
	// vX.0.0-yyyymmddhhmmss-abcdefabcdef, the commit time in UTC and the
	// revision's 12-character prefix; Go marks a modified tree "+dirty".
	v := "v0.0.0-" + t.UTC().Format("20060102150405") + "-" + rev[:12]
	if modified {
		v += "+dirty"
	}
	return v
}

// vcsInfo is the commit, its time and whether the tree was modified, as
// the build recorded them (vcs.revision, vcs.time, vcs.modified).
func vcsInfo(bi *debug.BuildInfo) (rev, when string, modified bool) {
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return rev, when, modified
}

// versionString is what --version prints after "agentauth version ".
func versionString() string { return describeBuild(serverVersion(), buildInfo()) }

// lazyVersion is the App's Version until it is printed: --version
// (printVersion) and the root help (printHelp) put versionString in its
// place, so that a command's start-up does not read and parse the build
// information (docs/performance.md).
const lazyVersion = "(worked out when printed)"

// urfaveVersionPrinter is urfave's own VersionPrinter, which printVersion
// wraps.
var urfaveVersionPrinter = cli.VersionPrinter

func init() { cli.VersionPrinter = printVersion }

// printVersion prints --version's line as urfave does.
func printVersion(c *cli.Context) {
	fillVersion(c.App)
	urfaveVersionPrinter(c)
}

// fillVersion gives app its version when it still has lazyVersion.
func fillVersion(app *cli.App) {
	if app.Version == lazyVersion {
		app.Version = versionString()
	}
}

// describeBuild is version with what bi says of the build: the commit and
// its date ("v1.2.3 (commit 1a2b3c4d5e6f, 2026-11-22T21:00:00Z, modified,
// go1.26.0)"), and never an unknown commit. Commit and Date, when stamped,
// stand in for a build that recorded no VCS information.
func describeBuild(version string, bi *debug.BuildInfo) string {
	if bi == nil {
		return version + " (no build information)"
	}
	rev, when, modified := vcsInfo(bi)
	if Commit != "" {
		rev, when, modified = Commit, Date, false
	}
	if rev == "" {
		return fmt.Sprintf("%s (%s)", version, bi.GoVersion)
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	mod := ""
	if modified {
		mod = ", modified"
	}
	return fmt.Sprintf("%s (commit %s, %s%s, %s)", version, rev, when, mod, bi.GoVersion)
}
