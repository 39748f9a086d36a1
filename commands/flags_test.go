package commands

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

// flagCase is one command line of a flag test: the options it parses to,
// or the exit code (and part of the usage error) it fails with.
type flagCase[O any] struct {
	name    string // the subtest's name; the args joined when empty
	args    []string
	verbose bool // the global --verbose flag
	want    O
	// wantCode is the exit code; a failing case stops there.
	wantCode int
	// wantErr, when set, must be part of the usage error.
	wantErr string
}

// checkFlags parses each case's args with the command newCmd builds on a
// test factory, its run function capturing the options. deps reports whether
// the options hold the factory's dependencies and clears them, so that the
// rest compares (with opts) to the case's want.
func checkFlags[O any](t *testing.T, cases []flagCase[O], newCmd func(*Factory, func(context.Context, *O) error) *cli.Command,
	deps func(*Factory, *O) bool, opts ...cmp.Option) {
	t.Helper()
	for _, c := range cases {
		name := c.name
		if name == "" {
			name = strings.Join(c.args, " ")
		}
		t.Run(name, func(t *testing.T) {
			f := newTestFactory(t, "").Factory
			f.Verbose = c.verbose
			var got *O
			err := parseCommand(t, newCmd(f, func(_ context.Context, o *O) error { got = o; return nil }), c.args...)
			var ue *UsageError
			if code := exitCode(err); code != c.wantCode || c.wantErr != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("exit code %d (%v), want %d with a usage error containing %q", code, err, c.wantCode, c.wantErr)
			}
			if c.wantCode != 0 {
				return
			}
			if !deps(f, got) {
				t.Error("the factory's dependencies were not copied into the options")
			}
			if diff := cmp.Diff(c.want, *got, opts...); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// parseCommand runs cmd alone with args, the way NewApp would, and returns
// the error (the run function captures the options).
func parseCommand(t *testing.T, cmd *cli.Command, args ...string) error {
	t.Helper()
	app := &cli.App{Name: "agentauth", Writer: io.Discard, ErrWriter: io.Discard, ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error { return &UsageError{Err: err} }, Commands: []*cli.Command{cmd}}
	cmd.OnUsageError = app.OnUsageError
	return app.Run(append([]string{"agentauth", cmd.Name}, args...))
}
