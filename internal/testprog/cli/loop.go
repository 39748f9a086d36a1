package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/agentauth/agentauth/store"
)

// Helpers of the client scripts (authenticate_, status_, revoke_, loop_, and
// store-edit for every script that needs a credential to have expired).
func init() {
	programs["store-edit"] = storeEditMain
	programs["exitcode"] = exitCodeMain
}

// exitCodeMain runs a command with the script's streams and succeeds when
// it exits with the expected code, which `! exec` cannot tell apart.
//
//	exitcode N COMMAND [ARG...]
func exitCodeMain() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: exitcode N COMMAND [ARG...]")
		os.Exit(2)
	}
	want, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "exitcode: bad code", os.Args[1])
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	got := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(os.Stderr, "exitcode:", err)
			os.Exit(1)
		}
		got = exit.ExitCode()
	}
	if got != want {
		fmt.Fprintf(os.Stderr, "exitcode: %s exited with %d, want %d\n", os.Args[2], got, want)
		os.Exit(1)
	}
}

// storeEditMain rewrites every credential in the file store of
// $AGENTAUTH_CONFIG_DIR, as time passing would, so that scripts need not
// wait for a token to expire.
//
//	store-edit [-expire-ago DURATION] [-drop-refresh] [-refresh-expire-ago DURATION]
//
// -refresh-expire-ago sets the refresh token's expiry (as a
// refresh_expires_in answer would have recorded it) that long in the past.
func storeEditMain() {
	fs := flag.NewFlagSet("store-edit", flag.ExitOnError)
	ago := fs.Duration("expire-ago", 0, "set each access token's expiry this long in the past")
	dropRefresh := fs.Bool("drop-refresh", false, "remove each refresh token")
	refreshAgo := fs.Duration("refresh-expire-ago", 0, "set each refresh token's expiry this long in the past")
	_ = fs.Parse(os.Args[1:])
	if err := storeEdit(*ago, *dropRefresh, *refreshAgo); err != nil {
		fmt.Fprintln(os.Stderr, "store-edit:", err)
		os.Exit(1)
	}
}

func storeEdit(ago time.Duration, dropRefresh bool, refreshAgo time.Duration) error {
	dir, err := store.ConfigDir()
	if err != nil {
		return err
	}
	st, err := store.Open(store.KindFile, dir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	creds, err := st.List(ctx)
	if err != nil {
		return err
	}
	if len(creds) == 0 {
		return fmt.Errorf("no credentials in %s", st.Location())
	}
	for _, c := range creds {
		if ago != 0 {
			c.Expiry = time.Now().Add(-ago)
		}
		if dropRefresh {
			c.RefreshToken = ""
		}
		if refreshAgo != 0 {
			c.RefreshExpiry = time.Now().Add(-refreshAgo)
		}
		if err := st.Put(ctx, c); err != nil {
			return err
		}
	}
	return nil
}
