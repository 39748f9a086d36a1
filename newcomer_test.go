// The newcomer test: the manual (README.md, then the docs/ pages in the
// order of the README's "I want to…" table) followed from top to bottom,
// every fenced code block run, checked or marked (the script commands
// that run them are in newcomer_blocks_test.go). See "The manual's code
// blocks" in docs/development.md for the design.

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentauth/agentauth/agentauthtest"
	"github.com/agentauth/agentauth/agentauthtest/script"
)

// docBlock is one fenced code block of a manual page.
type docBlock struct {
	page  string
	line  int    // the opening fence's line (1-based)
	lang  string // the fence's info string: sh, console, json, go, "" …
	text  string // the lines between the fences, their indentation removed
	fence string // the opening fence's line as written
	mark  string // the <!-- newcomer: … --> annotation before it, if any
	owner string // the test that runs it when it is in a checked walkthrough
}

func (b docBlock) where() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

// newcomerMark is the annotation a block may carry on the line before its
// fence (blank lines between allowed):
//
//	<!-- newcomer: not run: REASON -->        needs what the test cannot have
//	<!-- newcomer: run by FILE [FILE…] -->    another suite runs it
//	<!-- newcomer: paths -->                  each line starts with paths of the tree
var newcomerMark = regexp.MustCompile(`^<!-- newcomer: (.+?) -->$`)

// checkedWalkthroughs are the regions of the manual that other tests of
// this package run as a whole (on a terminal, in both store variants, or
// with a real OpenID Provider): from the marker to the first line that
// starts with end.
var checkedWalkthroughs = []struct{ marker, end, test string }{
	{walkthroughChecked, "## ", "TestREADMEWalkthrough"},
	{"<!-- walkthrough: checked by TestREADMEWalkthrough (broker) -->", "The upstream's whoami shows", "TestREADMEWalkthrough"},
	{oidcRecipeMarker, "## ", "TestDocsOIDCRecipe"},
}

var fenceRE = regexp.MustCompile("^( *)```([^`\\s]*)\\s*$")

// readDocBlocks returns the fenced code blocks of page, in order.
func readDocBlocks(t *testing.T, page string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var blocks []docBlock
	owner, ownerEnd := "", ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		for _, w := range checkedWalkthroughs {
			if strings.TrimSpace(l) == w.marker {
				owner, ownerEnd = w.test, w.end
			}
		}
		if owner != "" && strings.HasPrefix(l, ownerEnd) {
			owner = ""
		}
		if strings.HasPrefix(strings.TrimSpace(l), "~~~") {
			t.Errorf("%s:%d: a ~~~ fence: write code blocks with ``` so that TestNewcomer sees them", page, i+1)
		}
		m := fenceRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		blk := docBlock{page: page, line: i + 1, lang: m[2], fence: l, owner: owner}
		for j := i - 1; j >= 0; j-- {
			p := strings.TrimSpace(lines[j])
			if p == "" {
				continue
			}
			if mm := newcomerMark.FindStringSubmatch(p); mm != nil {
				blk.mark = mm[1]
			}
			break
		}
		indent := len(m[1])
		var body []string
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "```" {
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], strings.Repeat(" ", indent)))
		}
		if i == len(lines) {
			t.Fatalf("%s: the code block is not closed", blk.where())
		}
		blk.text = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, blk)
	}
	return blocks
}

// manualInOrder is README.md, then the docs/ pages in the order the
// README's "I want to…" table links them. A page of docs/ the table does
// not lead to is an error: a newcomer would never read it.
func manualInOrder(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## I want to…\n")
	if !ok {
		t.Fatal(`README.md has no "## I want to…" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	pages := []string{"README.md"}
	for _, m := range mdLink.FindAllStringSubmatch(table, -1) {
		p, _, _ := strings.Cut(m[1], "#")
		if strings.HasPrefix(p, "docs/") && strings.HasSuffix(p, ".md") && !slices.Contains(pages, p) {
			pages = append(pages, p)
		}
	}
	all, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if !slices.Contains(pages, filepath.ToSlash(p)) {
			t.Errorf("%s: the README's \"I want to…\" table does not lead to it", p)
		}
	}
	return pages
}

// TestNewcomer follows the manual as a newcomer does: README.md, then
// each page of docs/ in the order of the README's "I want to…" table,
// every fenced code block in document order. A block is run (sh and
// console blocks, with agentauth built from this tree, the test binary,
// on PATH), checked by the program that reads it (a serve config by
// `serve --check`, an MCP client's config by starting its server and
// calling it, an audit record against serve's own), compared (a console
// block's output), run by a walkthrough test of this package (its marker
// before it), or marked with the reason it is not run here; an unmarked
// block of another kind fails the test, so no new block goes untested.
//
// Each page becomes one generated testscript (listed in the failure
// output; AGENTAUTH_NEWCOMER_SCRIPTS=DIR keeps them), run in parallel
// with the others, each in its own $WORK: HOME, the config dir and the
// file store there, the clone's files linked in (commands run "from a
// clone"), a $BROWSER that approves as alice. A page whose blocks talk to
// 127.0.0.1:7777 gets a serve on a free port first, and the address is
// substituted; an `agentauth serve` a block runs listens on a free port.
func TestNewcomer(t *testing.T) {
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if keep := os.Getenv("AGENTAUTH_NEWCOMER_SCRIPTS"); keep != "" {
		dir = keep
		os.MkdirAll(dir, 0o755)
	}
	for i, page := range manualInOrder(t) {
		s := newcomerScript(t, page, readDocBlocks(t, page))
		name := fmt.Sprintf("%02d_%s.txtar", i, strings.TrimSuffix(filepath.Base(page), ".md"))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup:               func(e *testscript.Env) error { return newcomerSetup(e, root) },
		Cmds:                cmdsWith(map[string]func(*testscript.TestScript, bool, []string){"docblock": docBlockCmd, "docstop": docStopCmd}),
	})
}

// newcomerScript is page's testscript: each block run or checked in
// order by docblock; the blocks another test runs, and the marked ones
// (checked here), listed in comments.
func newcomerScript(t *testing.T, page string, blocks []docBlock) string {
	var s, files strings.Builder
	fmt.Fprintf(&s, "# %s, followed from top to bottom by TestNewcomer (generated):\n# each code block run or checked in order.\n\n", page)
	serving, backend, runs := false, false, 0
	for i, b := range blocks {
		kind, err := blockKind(b)
		if err != nil {
			t.Errorf("%s: %v", b.where(), err)
			continue
		}
		switch kind {
		case "owned", "marked":
			fmt.Fprintf(&s, "# %s (%s): %s\n", b.where(), b.lang, describeMark(b))
			continue
		}
		if strings.Contains(b.text, "127.0.0.1:8080") && !backend {
			s.WriteString("# The page's MCP server at 127.0.0.1:8080: one on a free port.\n")
			s.WriteString("exec rallymcp -addr-file backend.addr &backend&\nwaitfile backend.addr\naddrenv BACKEND backend.addr\n")
			backend = true
		}
		if (kind == "sh" || kind == "console" || kind == "mcpconfig") && usesServe(b) && !serving && !startsServe(b) {
			s.WriteString("# The page talks to serve at 127.0.0.1:7777: start it as the README's \"for scripts\n# and tests\" does, approving at once, on a free port.\n")
			s.WriteString("exec agentauth serve --listen 127.0.0.1:0 --addr-file serve.addr --auto-approve --log-file serve.log &serve&\nwaitfile serve.addr\naddrenv ADDR serve.addr\n")
			serving = true
		}
		if startsServe(b) {
			serving = true
		}
		file := fmt.Sprintf("block%02d.%s", i+1, kind)
		fmt.Fprintf(&s, "# %s (%s)\ndocblock %s %s %s\n", b.where(), b.lang, kind, file, b.where())
		fmt.Fprintf(&files, "-- %s --\n%s", file, b.text)
		runs++
	}
	if runs == 0 {
		return s.String()
	}
	s.WriteString("\ndocstop\n")
	if serving && strings.Contains(s.String(), "&serve&") {
		s.WriteString("kill -INT serve\nwait serve\n")
	}
	if backend {
		s.WriteString("kill -INT backend\nwait backend\n")
	}
	return s.String() + files.String()
}

// describeMark says, for the generated script, who runs a block.
func describeMark(b docBlock) string {
	if b.owner != "" {
		return "run by " + b.owner
	}
	return b.mark
}

// blockKind decides what the test does with b: "owned" (a walkthrough
// test runs it), "marked" (checked here, now: a suite that runs it, or
// not run, with a reason), or a kind docblock runs: sh, console, config
// (serve's), mcpconfig (an MCP client's), audit (an audit record), paths.
func blockKind(b docBlock) (string, error) {
	if b.owner != "" {
		if b.mark != "" {
			return "", fmt.Errorf("%s runs this block: drop its mark %q", b.owner, b.mark)
		}
		if b.fence != "```sh" && b.fence != "```console" {
			return "", fmt.Errorf("%s runs the blocks of its walkthrough that open with ```sh or ```console (not indented), not %q: move it out, or make it one of those", b.owner, b.fence)
		}
		if !testFuncExists(b.owner) {
			return "", fmt.Errorf("the marker names %s, which this package does not declare", b.owner)
		}
		return "owned", nil
	}
	switch {
	case b.mark == "paths":
		return "paths", nil
	case strings.HasPrefix(b.mark, "not run: "):
		if len(strings.Fields(strings.TrimPrefix(b.mark, "not run: "))) < 3 {
			return "", fmt.Errorf("the mark %q gives no reason", b.mark)
		}
		return "marked", nil
	case strings.HasPrefix(b.mark, "run by "):
		return "marked", checkRunBy(b)
	case b.mark != "":
		return "", fmt.Errorf("unknown mark %q (not run: REASON, run by FILE…, paths)", b.mark)
	}
	switch b.lang {
	case "sh", "bash", "shell":
		return "sh", nil
	case "console":
		return "console", nil
	case "json":
		var v map[string]any
		if err := json.Unmarshal([]byte(b.text), &v); err != nil {
			return "", fmt.Errorf("the JSON block does not parse: %v", err)
		}
		switch {
		case v["mcpServers"] != nil:
			return "mcpconfig", nil
		case v["msg"] == "audit":
			return "audit", nil
		case v["schemes"] != nil || v["backends"] != nil || v["upstreams"] != nil || v["login"] != nil:
			return "config", nil
		}
		return "", errors.New("a JSON block the test does not know how to check: mark it")
	}
	return "", fmt.Errorf("a %q block the test cannot run: make it run, or mark it (<!-- newcomer: not run: REASON --> or run by FILE)", b.lang)
}

// testFuncExists says whether a _test.go file of this package declares
// the test function name.
func testFuncExists(name string) bool {
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte("\nfunc "+name+"(t *testing.T)")) {
			return true
		}
	}
	return false
}

// checkRunBy checks a "run by FILE…" mark: each file exists, and each
// command of the block is in them: its program and subcommand words and
// its flags appear in the files (an example's values, URLs, paths and
// placeholders are the suite's own there, and the program often a
// variable). A pipeline's commands are checked each, but for the ones
// that only produce data (echo, printf, cat). `bash SCRIPT` names a file
// of the mark. A go block's lines appear as written; an output block's
// lines, figures aside.
func checkRunBy(b docBlock) error {
	files := strings.Fields(strings.TrimPrefix(b.mark, "run by "))
	var all strings.Builder
	for _, f := range files {
		c, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("the mark names %s: %v", f, err)
		}
		all.Write(c)
	}
	text := all.String()
	if b.lang == "json" {
		// A config another suite writes: each member name and each value
		// that is not an address is in its files.
		var v any
		if err := json.Unmarshal([]byte(b.text), &v); err != nil {
			return fmt.Errorf("the JSON block does not parse: %v", err)
		}
		for _, w := range jsonWords(v, nil) {
			if !strings.Contains(text, w) {
				return fmt.Errorf("%s do not hold %q", strings.Join(files, ", "), w)
			}
		}
		return nil
	}
	for _, cmd := range blockCommands(b) {
		var words []string
		switch b.lang {
		case "go":
			words = []string{strings.TrimSpace(cmd)}
		case "":
			words = outputWords(cmd)
		default:
			w, err := commandWords(cmd, files)
			if err != nil {
				return fmt.Errorf("%s: %v", cmd, err)
			}
			words = w
		}
		for _, w := range words {
			if !strings.Contains(text, w) {
				return fmt.Errorf("%s: %s do not hold %q", cmd, strings.Join(files, ", "), w)
			}
		}
	}
	return nil
}

// jsonWords are the member names of v and its values that are not
// addresses (placeholder), as text.
func jsonWords(v any, words []string) []string {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			words = jsonWords(e, append(words, k))
		}
	case []any:
		for _, e := range v {
			words = jsonWords(e, words)
		}
	case string:
		if !placeholder.MatchString(v) {
			words = append(words, v)
		}
	default:
		words = append(words, fmt.Sprint(v))
	}
	return words
}

var (
	figures     = regexp.MustCompile(`[0-9]+`)
	placeholder = regexp.MustCompile(`^(\$|https?://|wss?://|/|~|[A-Za-z0-9_.-]*\.(json|pem|jwt|sh|txt|secret)$|[A-Z_]+$)|[0-9]{6,}`)
	operators   = map[string]bool{"|": true, "&&": true, "||": true, ";": true}
)

// outputWords are the parts of an output line a suite that prints or
// checks it holds: the line, a leading PASS and figures aside.
func outputWords(line string) []string {
	var words []string
	for _, part := range figures.Split(strings.TrimPrefix(strings.TrimSpace(line), "PASS "), -1) {
		if part = strings.TrimSpace(part); part != "" {
			words = append(words, part)
		}
	}
	return words
}

// commandWords are the words of cmd that a suite running it must hold.
func commandWords(cmd string, files []string) ([]string, error) {
	cmd, _, _ = strings.Cut(cmd, " # ")
	fields, err := splitShell(cmd)
	if err != nil {
		return nil, err
	}
	var words []string
	start, data, value := true, false, false
	for _, f := range fields {
		switch {
		case operators[f]:
			start, data, value = true, false, false
		case data:
		case start && (f == "echo" || f == "printf" || f == "cat"):
			data = true // until the next operator: data, not a command
		case start && (f == "bash" || f == "sh"):
		case strings.HasPrefix(f, ">") || strings.HasPrefix(f, "<") || strings.HasPrefix(f, "2>"):
		case start && strings.HasSuffix(f, ".sh"):
			if !slices.Contains(files, f) {
				return nil, fmt.Errorf("runs %s, which the mark does not name", f)
			}
			start = false
		case strings.HasPrefix(f, "-") && f != "--":
			k, _, hasValue := strings.Cut(f, "=")
			words = append(words, k)
			start, value = false, !hasValue
		case value:
			value = false // a flag's value: the example's own
		default:
			start = false
			if !placeholder.MatchString(f) {
				words = append(words, f)
			}
		}
	}
	return words, nil
}

// blockCommands are b's commands: a console block's $ lines, an sh
// block's lines (comments and continuations joined), any other block's
// lines.
func blockCommands(b docBlock) []string {
	var cmds []string
	for _, l := range logicalLines(b.text) {
		switch {
		case b.lang == "console" && !strings.HasPrefix(l, "$ "):
		case b.lang == "console":
			cmds = append(cmds, strings.TrimPrefix(l, "$ "))
		case (b.lang == "sh" || b.lang == "go") && strings.HasPrefix(strings.TrimSpace(l), "#"), strings.TrimSpace(l) == "":
		case b.lang == "go" && strings.HasPrefix(strings.TrimSpace(l), "//"):
		default:
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// logicalLines joins lines continued with a trailing backslash.
func logicalLines(text string) []string {
	var out []string
	cont := false
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if cont {
			out[len(out)-1] = strings.TrimSuffix(out[len(out)-1], `\`) + " " + strings.TrimSpace(l)
		} else {
			out = append(out, l)
		}
		cont = strings.HasSuffix(l, `\`)
	}
	return out
}

// splitShell splits a command line into words as a shell would, quotes
// removed (no expansion).
func splitShell(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unbalanced quote")
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// usesServe says whether b talks to serve at the manual's address.
func usesServe(b docBlock) bool {
	return strings.Contains(b.text, "127.0.0.1:7777") || b.lang == "json" && strings.Contains(b.text, "mcp.example.com")
}

// startsServe says whether b starts a serve of its own, first thing.
func startsServe(b docBlock) bool {
	for _, l := range blockCommands(b) {
		return serveLine.MatchString(l)
	}
	return false
}

// newcomerMarker marks the processes a newcomer script starts, so that
// the ones a block left in the background are stopped.
const newcomerMarker = "AGENTAUTH_NEWCOMER_MARKER"

// newcomerSetup is script.Setup plus: a home directory, the clone's
// top-level files linked into $WORK (the manual's commands run from a
// clone), a $BROWSER that approves the consent page as alice, and a
// marker on every process, stopped when the script ends.
func newcomerSetup(e *testscript.Env, root string) error {
	if err := script.Setup(e); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(e.WorkDir, "home"), 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, en := range entries {
		n := en.Name()
		if strings.HasPrefix(n, ".") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(e.WorkDir, n)); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(root, n), filepath.Join(e.WorkDir, n)); err != nil {
			return err
		}
	}
	marker := rand.Text()
	e.Setenv(newcomerMarker, marker)
	e.Setenv("BROWSER", "browser-page "+filepath.Join(e.WorkDir, "browser.html")+" approve")
	e.Setenv("TERM", "dumb")
	e.Defer(func() {
		if left := stopProcesses(newcomerMarker, marker); len(left) > 0 {
			e.T().Log(fmt.Sprintf("processes left running: %v", left))
			e.T().FailNow()
		}
	})
	return nil
}

// stopProcesses interrupts the processes whose environment holds
// name=value until they are gone (10 s at most) and returns those left.
func stopProcesses(name, value string) []int {
	want := []byte(name + "=" + value + "\x00")
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(b, want) {
				continue
			}
			if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); bytes.Contains(st, []byte(") Z ")) {
				continue
			}
			left = append(left, pid)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGINT)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestManualGoSnippet runs the agentauthtest example of
// docs/development.md; TestNewcomer checks that its lines are here as
// written. Its comment's promise is checked too: tok.HTTPClient() reaches
// srv.URL as bob (an MCP client lists the handler's tool), and a request
// without a token gets 401.
func TestManualGoSnippet(t *testing.T) {
	app := mcp.NewServer(&mcp.Implementation{Name: "app", Version: "1"}, nil)
	mcp.AddTool(app, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
	})
	myMCPHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return app }, nil)

	srv := agentauthtest.NewServer(t, agentauthtest.WithHandler(myMCPHandler))
	tok := srv.Token(t, agentauthtest.TokenRequest{Subject: "bob"})
	// tok.HTTPClient() reaches srv.URL as bob; without a token: 401

	if tok.Subject != "bob" {
		t.Errorf("the token's subject is %q, not bob", tok.Subject)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: tok.HTTPClient()}, nil)
	if err != nil {
		t.Fatalf("with bob's token: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "hello" {
		t.Fatalf("with bob's token, tools/list: %v %+v", err, tools)
	}
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: %s, not 401", resp.Status)
	}
}
