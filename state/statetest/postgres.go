// Package statetest starts throwaway PostgreSQL servers for tests: initdb
// and pg_ctl (Debian's postgresql package) in a temporary directory,
// reachable only through a Unix socket in that directory.
// It imports no agentauth package; only tests import it.
package statetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// EnvRequirePostgres set to 1 turns a missing PostgreSQL into a test
// failure rather than a skip (CI sets it).
const EnvRequirePostgres = "AGENTAUTH_REQUIRE_POSTGRES"

// ErrNoPostgres says that initdb and pg_ctl were not found.
var ErrNoPostgres = errors.New("PostgreSQL binaries (initdb, pg_ctl) not found: install Debian's postgresql package")

// pgPort only names the socket file: the server listens on no TCP port.
const pgPort = 5432

// Postgres starts a server for t and returns its URL; the server stops at
// the end of the test. Without PostgreSQL it skips t, or fails it when
// EnvRequirePostgres is 1.
func Postgres(t testing.TB) string {
	t.Helper()
	url, stop, err := Start()
	if errors.Is(err, ErrNoPostgres) && os.Getenv(EnvRequirePostgres) != "1" {
		t.Skipf("skipping: %v (%s=1 makes this a failure)", err, EnvRequirePostgres)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// Start starts a server in a new temporary directory and returns its URL
// and the function that stops it and removes the directory.
func Start() (url string, stop func(), err error) {
	bin, err := binDir()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "agentauth-pg-")
	if err != nil {
		return "", nil, err
	}
	// initdb refuses to run as root: run the server as an unprivileged
	// user, who must own the directory.
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := unprivileged()
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		asUser = []string{"runuser", "-u", u.Username, "--"}
	}
	run := func(args ...string) error {
		args = append(slices.Clone(asUser), args...)
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", filepath.Base(args[len(asUser)]), err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "agentauth", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	opts := fmt.Sprintf("-k %s -c listen_addresses= -p %d -F", dir, pgPort)
	if err := run(filepath.Join(bin, "pg_ctl"), "start", "-D", data, "-w", "-l", filepath.Join(dir, "log"), "-o", opts); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop = func() {
		run(filepath.Join(bin, "pg_ctl"), "stop", "-D", data, "-m", "immediate", "-w")
		os.RemoveAll(dir)
	}
	return fmt.Sprintf("postgres://agentauth@/postgres?host=%s&port=%d&sslmode=disable", dir, pgPort), stop, nil
}

// binDir finds initdb: on PATH, else under /usr/lib/postgresql/*/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return filepath.Dir(p), nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", ErrNoPostgres
	}
	slices.Sort(found)
	return filepath.Dir(found[len(found)-1]), nil
}

func unprivileged() (*user.User, error) {
	for _, name := range []string{"postgres", "nobody"} {
		if u, err := user.Lookup(name); err == nil {
			return u, nil
		}
	}
	return nil, errors.New("cannot run PostgreSQL as root, and there is no postgres or nobody user")
}
