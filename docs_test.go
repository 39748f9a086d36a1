// The manual's own checks: every relative link of README.md and docs/*.md
// names a file that exists and, for a #fragment into a Markdown page, one
// of that page's headings; and the OpenID Provider recipe of the
// production page runs as written.

package main

import (
	"bufio"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink is an inline Markdown link or image: [label](target).
var mdLink = regexp.MustCompile(`!?\[[^\]\n]*\]\(([^)\s]+)\)`)

// manualPages is README.md and docs/*.md.
func manualPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, pages...)
}

// TestManualLinks fails on a relative link of the manual that leads
// nowhere: a missing file, or an anchor no heading of its page makes
// (GitHub's anchors: see headingAnchor).
func TestManualLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a := map[string]bool{}
		for _, h := range markdownHeadings(t, page) {
			a[h] = true
		}
		anchors[page] = a
		return a
	}
	n := 0
	for _, page := range manualPages(t) {
		forEachProseLine(t, page, func(lineNo int, line string) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
					continue
				}
				n++
				path, frag, _ := strings.Cut(target, "#")
				dest := page
				if path != "" {
					dest = filepath.Join(filepath.Dir(page), path)
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: %s: no such file %s", page, lineNo, target, dest)
					continue
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[frag] {
					t.Errorf("%s:%d: %s: %s has no heading #%s", page, lineNo, target, dest, frag)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("the manual has no relative links: is this the repository's root?")
	}
}

// forEachProseLine calls fn with each line of page outside ``` fences.
func forEachProseLine(t *testing.T, page string, fn func(lineNo int, line string)) {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	fence := false
	for i := 1; sc.Scan(); i++ {
		l := sc.Text()
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if !fence {
			fn(i, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// markdownHeadings returns the anchors of page's headings, a repeated one
// numbered -1, -2, … as GitHub does.
func markdownHeadings(t *testing.T, page string) []string {
	t.Helper()
	seen := map[string]int{}
	var out []string
	heading := regexp.MustCompile(`^#{1,6} (.*)$`)
	forEachProseLine(t, page, func(_ int, l string) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			return
		}
		a := headingAnchor(m[1])
		if k, ok := seen[a]; ok {
			seen[a] = k + 1
			a += "-" + strconv.Itoa(k+1)
		} else {
			seen[a] = 0
		}
		out = append(out, a)
	})
	return out
}

// headingAnchor is GitHub's anchor of a heading: its text without link
// targets, code and emphasis marks, lowercased, punctuation dropped,
// spaces turned into hyphens.
func headingAnchor(text string) string {
	text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// oidcRecipeMarker comes before the production page's recipe that runs
// a local OpenID Provider and serve signing users in at it.
const oidcRecipeMarker = "<!-- walkthrough: checked by TestDocsOIDCRecipe -->"

// TestDocsOIDCRecipe runs the manual's "Try an OpenID Provider locally"
// sh block as written (with bash -e, in a temporary directory, serve's
// 127.0.0.1:7777 a free port and testdata/oidc this clone's), and stops
// what it started. It ends by checking that serve sends a browser to the
// provider's /auth. It needs node and oidc-provider installed in
// testdata/oidc (testdata/oidc/run.sh does that; with
// AGENTAUTH_REQUIRE_OIDC=1 their absence is a failure). The block's
// `npm ci` is left out: run.sh ran it, and a second one would replace
// node_modules under the oidc testscripts running beside this test.
func TestDocsOIDCRecipe(t *testing.T) {
	oidc, err := filepath.Abs(filepath.Join("testdata", "oidc"))
	if err != nil {
		t.Fatal(err)
	}
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(oidc, "node_modules", "oidc-provider"))
	if nodeErr != nil || modErr != nil {
		if os.Getenv("AGENTAUTH_REQUIRE_OIDC") == "1" {
			t.Fatalf("node or oidc-provider missing (run npm ci in testdata/oidc): %v %v", nodeErr, modErr)
		}
		t.Skip("SKIPPED: needs node and npm ci in testdata/oidc (testdata/oidc/run.sh)")
	}
	if _, err := exec.LookPath("agentauth"); err != nil {
		t.Skip("SKIPPED: agentauth is not on PATH (go install .)")
	}
	page := manualPageWith(t, "README.md", oidcRecipeMarker)
	steps := readWalkthrough(t, page, oidcRecipeMarker, "\n## ")
	const npmCI = "(cd testdata/oidc && npm ci --no-audit --no-fund --silent)"
	if len(steps) != 1 || !strings.Contains(steps[0].script, npmCI) {
		t.Fatalf("%s: the recipe is not one sh block that starts with %s", page, npmCI)
	}
	dir := t.TempDir()
	marker := rand.Text()
	env := append(os.Environ(), "NO_COLOR=1", walkthroughMarker+"="+marker)
	t.Cleanup(func() { stopMarked(t, marker) })
	runSteps(t, env, dir, "", steps, strings.NewReplacer(npmCI, ": npm ci ran before", "127.0.0.1:7777", freeAddr(t), "testdata/oidc", oidc))
	stopMarked(t, marker)
}
