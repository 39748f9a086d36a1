// Package browser lets testscripts drive a real browser: Debian's
// Chromium through playwright-core, installed in testdata/browser by
// testdata/browser/run.sh (npm ci; Chromium by .ci/run). Scripts start
// with [!chromium] skip, then needbrowser, which sets $BROWSERTEST to that
// folder, whose page.mjs and drive.mjs they run with node.
package browser

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// Cmds are the script commands of this package, by name.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){"needbrowser": needBrowser}
}

// installed reports testdata/browser and whether playwright-core is
// installed there and Chromium ($CHROMIUM or /usr/bin/chromium) and node
// are on the machine.
func installed() (string, bool) {
	dir, err := filepath.Abs(filepath.Join("testdata", "browser"))
	if err != nil {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		return dir, false
	}
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		return dir, false
	}
	_, err = exec.LookPath("node")
	return dir, err == nil
}

// Condition answers the script condition [chromium]. With
// AGENTAUTH_REQUIRE_BROWSER=1 (testdata/browser/run.sh) a missing browser
// is an error rather than a skip.
func Condition(cond string) (bool, error) {
	if cond != "chromium" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	_, ok := installed()
	if !ok && os.Getenv("AGENTAUTH_REQUIRE_BROWSER") == "1" {
		return false, fmt.Errorf("the browser suite is not installed: install Debian's chromium and run npm ci in testdata/browser (AGENTAUTH_REQUIRE_BROWSER=1)")
	}
	return ok, nil
}

// needBrowser sets $BROWSERTEST to testdata/browser. Usage (after
// [!chromium] skip): needbrowser
func needBrowser(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: needbrowser")
	}
	dir, ok := installed()
	if !ok {
		ts.Fatalf("the browser suite is not installed: run npm ci in testdata/browser")
	}
	ts.Setenv("BROWSERTEST", dir)
}
