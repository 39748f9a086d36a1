package server

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentauth/agentauth/broker"
	"github.com/agentauth/agentauth/flows"
	"github.com/agentauth/agentauth/host"
	"github.com/agentauth/agentauth/issuer"
	"github.com/agentauth/agentauth/ops"
	"github.com/agentauth/agentauth/state"
)

// upstreamDiscoveryTimeout bounds the discovery of one upstream at start.
const upstreamDiscoveryTimeout = 15 * time.Second

// newBroker builds serve's broker for the config's upstreams (nil without
// any): each client secret read from its file or environment variable,
// each issuer's endpoints discovered (RFC 8414, then OpenID Connect).
// Without a state key the upstream tokens are stored in clear in the
// state store; it says so in the log.
//
// With the embedded issuer (iss), sign-in links of its sessions are bound
// to their user, whom its browser login vouches for (broker.Options.Browser).
func newBroker(ctx context.Context, cfg *host.Config, st state.Store, key []byte, origin string, hc *http.Client, logger *slog.Logger, now func() time.Time, tel *ops.Recorder, iss *issuer.Issuer, autoApprove bool) (*broker.Broker, error) {
	if len(cfg.Upstreams) == 0 {
		return nil, nil
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	var ups []broker.Upstream
	for i, c := range cfg.Upstreams {
		u, err := resolveUpstream(ctx, hc, c)
		if err != nil {
			return nil, upstreamError(i, c, err)
		}
		if !u.PKCE {
			logger.Warn("upstream sign-ins without PKCE: the upstream cannot do it, so only the client secret protects its codes (RFC 9700 §2.1.1)", "upstream", u.ID)
		}
		ups = append(ups, u)
	}
	if key == nil {
		logger.Warn("upstream tokens are stored in clear in the state store; encrypt them with --state-key-file or --state-key-keyring")
	}
	var lifetime time.Duration
	if cfg.StateLifetime != 0 {
		lifetime = time.Duration(cfg.StateLifetime)
	} else {
		lifetime = host.DefaultStateLifetime
	}
	bo := broker.Options{Store: st, Upstreams: ups, Origin: origin, StateLifetime: lifetime, Key: key,
		TokenLifetime: time.Duration(cfg.UpstreamTokenLifetime), HTTPClient: hc, Logger: logger, Now: now, Telemetry: tel}
	if iss != nil {
		bo.Browser, bo.ClientName, bo.AutoConfirm = iss, iss.ClientName, autoApprove
	}
	b, err := broker.New(ctx, bo)
	if err != nil {
		return nil, err
	}
	logger.Info("upstream broker ready", "upstreams", len(ups), "redirect_uri", b.RedirectURI(), "state_lifetime", lifetime)
	return b, nil
}

// upstreamError names the upstream a config error is about.
func upstreamError(i int, c host.Upstream, err error) error {
	return fmt.Errorf("invalid config: upstreams[%d] (%s): %w", i, c.ID, err)
}

// upstreamSecret is an upstream's client secret: clientSecret, or read
// from clientSecretFile or $clientSecretEnv (readClientSecret); empty
// for a public client.
func upstreamSecret(c host.Upstream) (string, error) {
	if c.ClientSecretFile == "" && c.ClientSecretEnv == "" {
		return c.ClientSecret, nil
	}
	return readClientSecret(c.ClientSecretFile, c.ClientSecretEnv)
}

// resolveUpstream reads an upstream's secret and discovers its endpoints
// from its issuer unless they are configured.
func resolveUpstream(ctx context.Context, hc *http.Client, c host.Upstream) (broker.Upstream, error) {
	secret, err := upstreamSecret(c)
	if err != nil {
		return broker.Upstream{}, err
	}
	u := broker.Upstream{ID: c.ID, Label: cmp.Or(c.Label, c.ID), AuthorizationEndpoint: c.AuthorizationEndpoint, TokenEndpoint: c.TokenEndpoint,
		RevocationEndpoint: c.RevocationEndpoint, Scopes: c.Scopes, PKCE: c.UsesPKCE(), Resource: c.Resource, API: c.API,
		Client: flows.Client{ID: c.ClientID, Secret: secret, AuthMethod: c.TokenEndpointAuthMethod}}
	u.Issuer = c.Issuer
	if c.AuthorizationEndpoint == "" {
		dctx, cancel := context.WithTimeout(ctx, upstreamDiscoveryTimeout)
		defer cancel()
		md, err := flows.FetchAuthServerMetadata(dctx, hc, c.Issuer)
		if err != nil {
			return broker.Upstream{}, fmt.Errorf("cannot discover the upstream's endpoints: %w\nCheck issuer, or give authorizationEndpoint and tokenEndpoint instead", err)
		}
		u.Issuer, u.IssRequired = md.Issuer, md.AuthorizationResponseIssParameterSupported
		u.AuthorizationEndpoint, u.TokenEndpoint = md.AuthorizationEndpoint, md.TokenEndpoint
		u.RevocationEndpoint = cmp.Or(c.RevocationEndpoint, md.RevocationEndpoint)
		if u.AuthorizationEndpoint == "" || u.TokenEndpoint == "" {
			return broker.Upstream{}, fmt.Errorf("the metadata of %s has no authorization_endpoint or token_endpoint", c.Issuer)
		}
		if c.TokenEndpointAuthMethod == "" && secret != "" {
			m, err := flows.ChooseAuthMethod(md.TokenEndpointAuthMethodsSupported, true)
			if err != nil {
				return broker.Upstream{}, err
			}
			u.Client.AuthMethod = m
		}
	}
	return u, nil
}
