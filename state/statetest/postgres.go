// Package statetest starts throwaway PostgreSQL servers for tests: initdb
// and pg_ctl (Debian's postgresql package) in a temporary directory,
// reachable only through a Unix socket in that directory.
// It imports no agentauth package; only tests import it.
//
// Not meant for import by other modules: statetest is agentauth's implementation,
// and its API changes as agentauth needs. Go programs and tests use the
// packages agentauthtest, agentauthtest/script and mcptransport.
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
	srv, err := StartServer()
	if err != nil {
		return "", nil, err
	}
	return srv.URL, srv.Stop, nil
}

// Server is a throwaway PostgreSQL server.
type Server struct {
	// URL reaches the server's postgres database.
	URL string
	// run runs a PostgreSQL program as the server's owner.
	run       func(args ...string) error
	bin, data string
	dir       string
}

// Started is Postgres for tests that restart the server: it returns the
// running server, stopped at the end of the test.
func Started(t testing.TB) *Server {
	t.Helper()
	srv, err := StartServer()
	if errors.Is(err, ErrNoPostgres) && os.Getenv(EnvRequirePostgres) != "1" {
		t.Skipf("skipping: %v (%s=1 makes this a failure)", err, EnvRequirePostgres)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// StartServer starts a server in a new temporary directory.
func StartServer() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentauth-pg-")
	if err != nil {
		return nil, err
	}
	// initdb refuses to run as root: run the server as an unprivileged
	// user, who must own the directory.
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := unprivileged()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
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
	srv := &Server{run: run, bin: bin, dir: dir, data: filepath.Join(dir, "data"),
		URL: fmt.Sprintf("postgres://agentauth@/postgres?host=%s&port=%d&sslmode=disable", dir, pgPort)}
	if err := run(filepath.Join(bin, "initdb"), "-D", srv.data, "-A", "trust", "-U", "agentauth", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := srv.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return srv, nil
}

// Start starts the server (again), waiting until it accepts connections.
func (s *Server) Start() error {
	opts := fmt.Sprintf("-k %s -c listen_addresses= -p %d -F", s.dir, pgPort)
	return s.run(filepath.Join(s.bin, "pg_ctl"), "start", "-D", s.data, "-w", "-l", filepath.Join(s.dir, "log"), "-o", opts)
}

// Halt stops the server at once (pg_ctl stop -m immediate), keeping its
// data for Start.
func (s *Server) Halt() error {
	return s.run(filepath.Join(s.bin, "pg_ctl"), "stop", "-D", s.data, "-m", "immediate", "-w")
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	s.Halt()
	os.RemoveAll(s.dir)
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
