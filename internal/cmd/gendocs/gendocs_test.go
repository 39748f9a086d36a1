//go:build !urfave_cli_no_docs

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// referenceDir is the committed reference, from this package's directory.
var referenceDir = filepath.Join("..", "..", "..", "docs", "reference")

// TestReferenceIsCurrent: docs/reference is what the commands print
// today, page for page, with no page left over.
func TestReferenceIsCurrent(t *testing.T) {
	pages, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	const fix = "\nTo update it, run: go run ./internal/cmd/gendocs -reference docs/reference"
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(referenceDir, name))
		if err != nil {
			t.Errorf("docs/reference/%s: %v%s", name, err, fix)
			continue
		}
		if string(got) != want {
			t.Errorf("docs/reference/%s differs from the commands' help%s", name, fix)
		}
	}
	files, _ := filepath.Glob(filepath.Join(referenceDir, "*.md"))
	for _, f := range files {
		if _, ok := pages[filepath.Base(f)]; !ok {
			t.Errorf("docs/reference/%s belongs to no command or topic%s", filepath.Base(f), fix)
		}
	}
	if len(pages) < len(visibleCommands())+len(topics)+2 {
		t.Errorf("only %d pages", len(pages))
	}
}

// TestManPage: agentauth.1 is a section 1 page naming every command,
// with the exit codes and the environment.
func TestManPage(t *testing.T) {
	dir := t.TempDir()
	if err := writeMan(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "agentauth.1"))
	if err != nil {
		t.Fatal(err)
	}
	m := string(b)
	if !strings.Contains(m, "\n.TH agentauth 1\n") {
		t.Errorf("not a section 1 page:\n%.200s", m)
	}
	for _, want := range []string{".SH EXIT STATUS", "130  interrupted", ".SH ENVIRONMENT", "AGENTAUTH_TOKEN"} {
		if !strings.Contains(m, want) {
			t.Errorf("the man page lacks %q", want)
		}
	}
	for _, c := range visibleCommands() {
		if !strings.Contains(m, c.Name) {
			t.Errorf("the man page does not name %s", c.Name)
		}
	}
}

// TestCompletions: each shell's script is written under the name its
// package directory expects.
func TestCompletions(t *testing.T) {
	dir := t.TempDir()
	if err := writeCompletions(dir); err != nil {
		t.Fatal(err)
	}
	for shell, name := range completionFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(b), "__complete") {
			t.Errorf("%s completion %s: %v\n%.200s", shell, name, err, b)
		}
	}
}
