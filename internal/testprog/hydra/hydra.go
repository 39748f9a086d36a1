// Package hydra holds the test programs of the hydra_*.txtar scripts:
// sign-in at ORY Hydra v2.3.0, a real OpenID Provider that
// testdata/hydra/run.sh builds from the Go module proxy and names in
// $AGENTAUTH_HYDRA.
//
//   - hydra-serve DIR runs `hydra serve all --dev` with an in-memory
//     database on two loopback ports chosen free at start (Hydra takes a
//     port number, not a listener), with our login and consent app, which
//     answers every login and consent at once through Hydra's admin API:
//     as the user named in DIR/user, or refusing with access_denied when
//     DIR/user is "!deny". It writes Hydra's public and admin addresses to
//     DIR/public and DIR/admin once Hydra is ready, logs Hydra to
//     DIR/hydra.log and its own answers to DIR/app.log, and on kill -INT
//     stops Hydra and exits 0.
//   - hydraclient ADMINFILE JSONFILE creates an OAuth 2.0 client with
//     Hydra's admin API (POST /admin/clients) at the address in ADMINFILE.
//   - the condition [hydra]: $AGENTAUTH_HYDRA names an executable; with
//     AGENTAUTH_REQUIRE_HYDRA=1 (testdata/hydra/run.sh) its absence is an
//     error rather than a skip; and needhydra, which passes
//     $AGENTAUTH_HYDRA on to the script's programs.
package hydra

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Programs are the test programs of this package, by name.
func Programs() map[string]func() {
	return map[string]func(){"hydra-serve": serveMain, "hydraclient": clientMain}
}

// Cmds are the script commands of this package, by name.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){"needhydra": needHydra}
}

// needHydra sets the script's $AGENTAUTH_HYDRA to the test's. Usage
// (after [!hydra] skip): needhydra
func needHydra(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: needhydra")
	}
	if ok, err := Condition("hydra"); !ok {
		ts.Fatalf("ORY Hydra is not built (%v): run testdata/hydra/run.sh", err)
	}
	ts.Setenv("AGENTAUTH_HYDRA", os.Getenv("AGENTAUTH_HYDRA"))
}

// Condition answers the script condition [hydra].
func Condition(cond string) (bool, error) {
	if cond != "hydra" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	bin := os.Getenv("AGENTAUTH_HYDRA")
	st, err := os.Stat(bin)
	ok := bin != "" && err == nil && st.Mode()&0o111 != 0
	if !ok && os.Getenv("AGENTAUTH_REQUIRE_HYDRA") == "1" {
		return false, fmt.Errorf("ORY Hydra is not built: run testdata/hydra/run.sh, which names it in $AGENTAUTH_HYDRA (AGENTAUTH_REQUIRE_HYDRA=1)")
	}
	return ok, nil
}

func fail(prog string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
	os.Exit(1)
}

// serveMain is hydra-serve. Usage: hydra-serve DIR
func serveMain() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: hydra-serve DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	bin := os.Getenv("AGENTAUTH_HYDRA")
	if bin == "" {
		fail("hydra-serve", errors.New("$AGENTAUTH_HYDRA is not set"))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fail("hydra-serve", err)
	}
	app := &loginApp{dir: dir, hc: &http.Client{Timeout: 10 * time.Second}}
	appLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("hydra-serve", err)
	}
	appSrv := &http.Server{Handler: app, ReadHeaderTimeout: 10 * time.Second}
	go appSrv.Serve(appLn)

	// A port chosen free may be taken before Hydra binds it: try again
	// with new ones, a few times.
	var h *hydraProc
	for attempt := 0; ; attempt++ {
		if h, err = startHydra(bin, dir, "http://"+appLn.Addr().String()); err == nil {
			break
		}
		if attempt == 2 {
			fail("hydra-serve", err)
		}
	}
	app.setAdmin(h.admin)
	for name, addr := range map[string]string{"admin": h.admin, "public": h.public} {
		if err := writeAtomic(filepath.Join(dir, name), addr+"\n"); err != nil {
			_ = h.cmd.Process.Kill()
			fail("hydra-serve", err)
		}
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
		_ = h.cmd.Process.Signal(os.Interrupt)
		select {
		case <-h.exited:
		case <-time.After(10 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
		}
	case err := <-h.exited:
		fail("hydra-serve", fmt.Errorf("hydra exited: %v (see %s)", err, filepath.Join(dir, "hydra.log")))
	}
	_ = appSrv.Shutdown(context.Background())
}

// hydraProc is a running Hydra: exited receives its Wait's answer.
type hydraProc struct {
	cmd           *exec.Cmd
	exited        chan error
	public, admin string
}

// startHydra starts Hydra on two free loopback ports and waits until its
// admin API says it is ready (at most 60 s).
func startHydra(bin, dir, app string) (*hydraProc, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	h := &hydraProc{public: "127.0.0.1:" + ports[0], admin: "127.0.0.1:" + ports[1], exited: make(chan error, 1)}
	logf, err := os.OpenFile(filepath.Join(dir, "hydra.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	h.cmd = exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out")
	h.cmd.Env = append(os.Environ(),
		"DSN=memory",
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_PUBLIC_PORT="+ports[0],
		"SERVE_ADMIN_HOST=127.0.0.1", "SERVE_ADMIN_PORT="+ports[1],
		"URLS_SELF_ISSUER=http://"+h.public,
		"URLS_LOGIN="+app+"/login", "URLS_CONSENT="+app+"/consent",
		"SECRETS_SYSTEM="+rand.Text(),
		"LOG_LEVEL=info", "SQA_OPT_OUT=true",
	)
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { h.exited <- h.cmd.Wait() }()
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-h.exited:
			return nil, fmt.Errorf("hydra exited at start: %v (see %s)", err, filepath.Join(dir, "hydra.log"))
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := hc.Get("http://" + h.admin + "/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h, nil
			}
		}
	}
	_ = h.cmd.Process.Kill()
	<-h.exited
	return nil, errors.New("hydra was not ready within 60 s")
}

// freePorts are n ports free on 127.0.0.1 now, all held at once so that
// they differ.
func freePorts(n int) ([]string, error) {
	var out []string
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	return out, nil
}

func writeAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
