package server

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/agentauth/agentauth/ops"
)

// CheckReport is what Check found valid, for serve --check to print.
type CheckReport struct {
	Schemes  int
	Embedded bool // the embedded issuer would run
	Listen   string
	State    string // "postgres", "sqlite DIR" or "memory"
}

// Check validates opts as New does before it serves — the flags'
// combinations, the config file, the login provider's client secret, the
// TLS certificate and key, the state key — and opens nothing: no
// listener, no state store, no log file, no connection (the database, an
// OpenID Provider and the upstreams are not contacted). It is serve
// --check, for systemd's ExecStartPre and CI. An error names the problem.
func Check(opts Options) (*CheckReport, error) {
	s := &Server{opts: opts}
	if err := s.readConfig(); err != nil {
		return nil, err
	}
	host, err := checkHostPort("--listen", opts.Listen)
	if err != nil {
		return nil, err
	}
	if opts.MetricsListen != "" {
		if _, err := checkHostPort("--metrics-listen", opts.MetricsListen); err != nil {
			return nil, err
		}
	}
	if s.embedded && s.listening {
		if _, err := embeddedLogin(&s.opts, s.cfg, isLoopbackHost(host), opts.HTTPClient); err != nil {
			return nil, err
		}
	} else if !s.embedded && s.cfg.Login != nil {
		return nil, s.chooseLogin()
	}
	for i, c := range s.cfg.Upstreams {
		if _, err := upstreamSecret(c); err != nil {
			return nil, upstreamError(i, c, err)
		}
	}
	for i, b := range s.cfg.Backends {
		if b.TokenExchange != nil {
			if err := b.TokenExchange.CheckSecret(fmt.Sprintf("backends[%d]", i)); err != nil {
				return nil, fmt.Errorf("invalid config: %w", err)
			}
		}
	}
	if opts.TLSCert != "" {
		if _, err := ops.LoadCertificate(opts.TLSCert, opts.TLSKey); err != nil {
			return nil, err
		}
	}
	if (s.embedded || len(s.cfg.Upstreams) > 0) && !opts.StateKeyKeyring {
		if _, err := readStateKey(opts.StateKeyFile); err != nil {
			return nil, err
		}
	}
	r := &CheckReport{Schemes: len(s.cfg.Schemes), Embedded: s.embedded, Listen: opts.Listen, State: "memory"}
	switch {
	case opts.Database != "":
		u, err := url.Parse(opts.Database)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, usagef("--database must be a postgres:// URL")
		}
		r.State = "postgres"
	case opts.DataDir != "":
		r.State = "sqlite in " + opts.DataDir
	}
	if !s.listening {
		r.Listen = ""
	}
	return r, nil
}

// checkHostPort checks a listen address HOST:PORT as net.Listen reads it
// and returns HOST.
func checkHostPort(flag, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usagef("%s %s: write the address as HOST:PORT, for example 127.0.0.1:7777", flag, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", usagef("%s %s: the port must be a number from 0 to 65535", flag, addr)
	}
	if host != "" && host != "localhost" && net.ParseIP(host) == nil {
		if _, err := net.LookupHost(host); err != nil {
			return "", fmt.Errorf("%s %s: cannot resolve %s: %w", flag, addr, host, err)
		}
	}
	return host, nil
}
