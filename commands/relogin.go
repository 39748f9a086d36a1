package commands

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/store"
)

// checkRelogin stops a login that would silently replace a valid one.
// When TARGET already has a usable credential (valid or refreshable, not
// rejected) and --force is not given: on a terminal (stdin and stderr) it
// asks, and a "no" keeps the current login (exit 0, nothing done); without
// a terminal it never prompts: it says so on stderr and logs in again. It
// returns whether to go on. A store it cannot read is left for the login
// to report. kept are the usable credentials found, for --json.
func checkRelogin(ctx context.Context, opts *LoginOptions) (goOn bool, kept []*store.Credential, err error) {
	if opts.Force {
		return true, nil, nil
	}
	// A store that cannot be read is the login's to report.
	cs, err := opts.Factory.Client().Credentials()
	if err != nil {
		return true, nil, nil
	}
	creds, err := cs.ForTarget(ctx, opts.Target, opts.SchemeID)
	if err != nil {
		return true, nil, nil
	}
	var current []string
	for _, c := range creds {
		st := client.DescribeCredential(c, opts.Factory.Now(), false)
		if st.Usable() {
			current = append(current, fmt.Sprintf("%s as %s (%s)", st.Describe(), cmp.Or(st.Subject, "an unknown subject"), st.Expiry))
			kept = append(kept, c)
		}
	}
	if len(current) == 0 {
		return true, nil, nil
	}
	w := opts.IO.ErrOut
	for _, c := range current {
		fmt.Fprintf(w, "You are already logged in to %s.\n", safeText(c))
	}
	if !opts.IO.StdinTTY || !opts.IO.StderrTTY {
		fmt.Fprintln(w, "Logging in again replaces it (no terminal to ask on; --force skips this note).")
		return true, nil, nil
	}
	fmt.Fprint(w, "Log in again and replace it? [y/N] ")
	line, err := bufio.NewReader(opts.IO.In).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(w)
		return false, nil, fmt.Errorf("cannot read the answer: %w", err)
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		fmt.Fprintln(w, "Keeping the current login. (--force logs in again without asking.)")
		return false, kept, nil
	}
	return true, nil, nil
}
