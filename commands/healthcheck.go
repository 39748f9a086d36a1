package commands

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// HealthcheckOptions are healthcheck's inputs.
type HealthcheckOptions struct {
	IO         *IOStreams
	HTTPClient *http.Client

	URL         string
	Timeout     time.Duration
	AllowRemote bool
}

// defaultHealthURL is serve's readiness endpoint at its default address.
const defaultHealthURL = "http://127.0.0.1:7777/readyz"

// maxHealthBody bounds what healthcheck reads and prints of the answer.
const maxHealthBody = 4 << 10

func newHealthcheckCommand(f *Factory) *cli.Command {
	opts := &HealthcheckOptions{}
	return &cli.Command{
		Name:  "healthcheck",
		Usage: "check that a serve on this machine is ready (GET /readyz): exit 0 when it answers 200, 1 otherwise",
		Description: `For a container HEALTHCHECK or a service manager's probe where there is no
shell and no curl (the agentauth image is FROM scratch): GET --url, exit 0
with the answer on stdout when it is 200 OK, else 1 with the status (or the
connection error) and the answer on stderr. Redirects are not followed.

The URL must be on a loopback address unless --allow-remote: a health probe
checks the process beside it, and a typo should not send requests elsewhere.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Value: defaultHealthURL, Usage: "the readiness `URL` (serve's /readyz, or /healthz for liveness)", Destination: &opts.URL},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "give up after `DURATION`", Destination: &opts.Timeout},
			&cli.BoolFlag{Name: "allow-remote", Usage: "allow a URL whose host is not a loopback address", Destination: &opts.AllowRemote},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usageErrorf("healthcheck takes no arguments: give the address with --url")
			}
			if err := opts.check(); err != nil {
				return err
			}
			opts.IO = f.IO
			opts.HTTPClient = &http.Client{Transport: f.HTTPClient.Transport,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			return runHealthcheck(c.Context, opts)
		},
	}
}

// check refuses a URL that is not http(s), or not on loopback without
// --allow-remote, and a timeout that is not positive.
func (opts *HealthcheckOptions) check() error {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("--url must be an http or https URL, for example %s", defaultHealthURL)
	}
	ip := net.ParseIP(u.Hostname())
	if !opts.AllowRemote && u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageErrorf("--url %s is not on a loopback address: give --allow-remote to check another host", safeText(opts.URL))
	}
	if opts.Timeout <= 0 {
		return usageErrorf("--timeout must be positive, e.g. 5s")
	}
	return nil
}

func runHealthcheck(ctx context.Context, opts *HealthcheckOptions) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opts.URL, nil)
	if err != nil {
		return err
	}
	resp, err := opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("unhealthy: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxHealthBody))
	text := strings.TrimSpace(safeLines(string(body)))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: %s answered %s: %s", safeText(opts.URL), resp.Status, text)
	}
	_, err = fmt.Fprintln(opts.IO.Out, text)
	return err
}
