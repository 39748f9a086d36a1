package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"syscall"

	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/state"
)

// serve's configuration: the config file or the built-in one, what the
// embedded issuer needs from it, and its reload on SIGHUP.

// The built-in configuration's scheme (PROTOCOL.md "Auth requirements").
const (
	defaultSchemeID    = "dev"
	defaultSchemeLabel = "agentauth dev issuer"
	defaultScope       = "agent:use"
)

// reloadOnHangup re-reads --config on SIGHUP and puts it in force
// (host.Reload). A config that does not parse or check is refused, with the
// key named, and the running one stays in force; so is one that would need
// the embedded issuer when it is not running. A reload on SIGHUP is
// published to the replicas sharing st (PostgreSQL), and each of them
// re-reads its own --config in turn, without publishing again. It returns
// the function that stops listening for SIGHUP.
func reloadOnHangup(ctx context.Context, opts *Options, h *host.Host, st state.Store, embedded bool, issuerOrigin string, upstreams []host.Upstream, running *host.Config, logger *slog.Logger) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	// remote holds one pending reload published by another replica: more
	// arriving meanwhile need no second read.
	remote := make(chan struct{}, 1)
	st.OnConfigChanged(func() {
		select {
		case remote <- struct{}{}:
		default:
		}
	})
	done := make(chan struct{})
	go func() {
		for {
			publish := false
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-hup:
				publish = true
			case <-remote:
				logger.Info("config changed on another replica; re-reading --config")
			}
			cfg, err := loadConfig(opts)
			switch {
			case err != nil:
			case usesEmbeddedIssuer(cfg) && !embedded:
				err = errors.New(`a scheme names "embedded" and the embedded issuer is not running; restart serve to start it`)
			default:
				cfg.Resolve(issuerOrigin)
				err = h.Reload(cfg)
			}
			if err == nil && !reflect.DeepEqual(cfg.Upstreams, upstreams) {
				logger.Warn("the upstreams changed; they take effect when serve restarts (the running ones stay in force)")
			}
			if err == nil && gatewayChanged(cfg, running) {
				logger.Warn("backends, toolScopes, toolUpstreams or redact changed; they take effect when serve restarts (the running ones stay in force)")
			}
			if err == nil && !reflect.DeepEqual(cfg.Login, running.Login) {
				logger.Warn("the login changed; it takes effect when serve restarts (the running one stays in force)")
			}
			if err != nil {
				logger.Error("config reload refused; the running config stays in force", "err", err)
				continue
			}
			if publish {
				if err := st.PublishConfigChanged(ctx); err != nil {
					logger.Warn("config reloaded, but the other replicas cannot be told: send them SIGHUP", "err", err)
				}
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}

// loadConfig loads --config, or builds the built-in configuration: one
// required scheme "dev" with jwt validation, bound to the embedded issuer
// or to --issuer, scope agent:use. Both go through host.ParseConfig's checks.
func loadConfig(opts *Options) (*host.Config, error) {
	if opts.ConfigPath != "" {
		cfg, err := host.LoadConfig(opts.ConfigPath)
		if err != nil {
			return nil, err
		}
		if opts.Resource != "" {
			if cfg.Resource != "" && cfg.Resource != opts.Resource {
				return nil, usagef("--resource %s differs from the config's resource %s: keep one", opts.Resource, cfg.Resource)
			}
			cfg.Resource = opts.Resource
		}
		return cfg, backendFlag(cfg, opts.Backend)
	}
	as, label := host.Embedded, defaultSchemeLabel
	if opts.Issuer != "" {
		as, label = opts.Issuer, opts.Issuer
	}
	doc := map[string]any{"schemes": []any{map[string]any{
		"id": defaultSchemeID, "label": label, "authorizationServers": []string{as},
		"scopesSupported": []string{defaultScope}, "validation": map[string]string{"type": host.ValidationJWT},
	}}}
	if opts.Resource != "" {
		doc["resource"] = opts.Resource
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	cfg, err := host.ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("cannot build the default configuration: %w", err)
	}
	return cfg, backendFlag(cfg, opts.Backend)
}

// usesEmbeddedIssuer reports whether a scheme takes its tokens from the
// embedded issuer: "embedded" among its authorizationServers, with jwt or
// introspection validation. (A static scheme naming "embedded" only
// advertises the listener's origin.)
func usesEmbeddedIssuer(cfg *host.Config) bool {
	for _, s := range cfg.Schemes {
		if s.Validation.Type != host.ValidationStatic && slices.Contains(s.AuthorizationServers, host.Embedded) {
			return true
		}
	}
	return false
}

// introspectionClients are the confidential clients the embedded issuer
// pre-registers so that an introspection scheme against it can
// authenticate (RFC 7662 §2.1).
func introspectionClients(cfg *host.Config) ([]issuer.Client, error) {
	var out []issuer.Client
	for _, s := range cfg.Schemes {
		v := s.Validation
		if v.Type != host.ValidationIntrospection || !slices.Contains(s.AuthorizationServers, host.Embedded) {
			continue
		}
		i := slices.IndexFunc(out, func(c issuer.Client) bool { return c.ID == v.ClientID })
		switch {
		case i < 0:
			out = append(out, issuer.Client{ID: v.ClientID, Secret: v.ClientSecret, AuthMethod: issuer.AuthClientSecretBasic,
				Name: "agent host (introspection for scheme " + s.ID + ")"})
		case out[i].Secret != v.ClientSecret:
			return nil, fmt.Errorf("invalid config: schemes %s: clientId %q appears with two different secrets", s.ID, v.ClientID)
		}
	}
	return out, nil
}

// embeddedScopes are the scopes the embedded issuer advertises and grants
// by default: those of the schemes bound to it, else agent:use.
func embeddedScopes(cfg *host.Config) []string {
	var out []string
	for _, s := range cfg.Schemes {
		if slices.Contains(s.AuthorizationServers, host.Embedded) {
			for _, sc := range s.ScopesSupported {
				if !slices.Contains(out, sc) {
					out = append(out, sc)
				}
			}
		}
	}
	if len(out) == 0 {
		out = []string{defaultScope}
	}
	return out
}
