package commands

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/store"
)

// TestEnvironmentTopicNamesEveryVariable: `agentauth help environment`
// names every variable the program's source reads by a literal name
// (os.Getenv, os.LookupEnv) or by one of its Env constants; the test
// programs under internal/testprog and the test helpers do not count.
func TestEnvironmentTopicNamesEveryVariable(t *testing.T) {
	read := regexp.MustCompile(`os\.(?:Getenv|LookupEnv)\("([A-Z_][A-Z0-9_]*)"\)`)
	names := map[string]string{
		EnvToken: "commands", store.EnvStore: "store", store.EnvConfigDir: "store", client.EnvGitHubClientID: "client",
	}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "testdata", "internal/testprog", "state/statetest", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range read.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("found only %d variables: the source scan is broken", len(names))
	}
	for name, where := range names {
		if !regexp.MustCompile(`(^|\n|, )` + name + `\b`).MatchString(environmentTopic) {
			t.Errorf("%s (read in %s) is missing from agentauth help environment", name, where)
		}
	}
}

// TestHelpTopics: each topic prints its page on stdout and exits 0; an
// unknown one is an unknown command (exit 2).
func TestHelpTopics(t *testing.T) {
	for topic, want := range map[string]string{"exit-codes": "130  interrupted", "environment": "AGENTAUTH_TOKEN\n"} {
		tf := newTestFactory(t, "")
		if code := tf.run("help", topic); code != ExitOK {
			t.Errorf("help %s exited %d: %s", topic, code, tf.errOut)
		}
		if !strings.Contains(tf.out.String(), want) {
			t.Errorf("help %s does not say %q:\n%s", topic, want, tf.out)
		}
	}
	tf := newTestFactory(t, "")
	if code := tf.run("help", "exit-code"); code != ExitUsage {
		t.Errorf("help exit-code exited %d, want %d", code, ExitUsage)
	}
}
