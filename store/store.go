package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Key identifies a credential: the protected resource (RFC 9728 §2
// "resource", exactly as discovered), the authorization server's issuer
// (RFC 8414 §2) and the agent host's scheme id (empty for plain HTTP targets).
type Key struct {
	Resource string `json:"resource"`
	Issuer   string `json:"issuer"`
	SchemeID string `json:"scheme_id,omitempty"`
}

// ClientRegistration is the OAuth client agentauth used with an issuer.
type ClientRegistration struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// AuthMethod is the token endpoint auth method (RFC 7591 §2):
	// none, client_secret_basic, client_secret_post or private_key_jwt.
	AuthMethod string `json:"auth_method,omitempty"`
	// PrivateKey is the PEM private key of a private_key_jwt client
	// (RFC 7523 §2.2), a secret like ClientSecret.
	PrivateKey string `json:"private_key,omitempty"`
	// Source is how the client was obtained: "dcr", "preregistered" or "cimd".
	Source string `json:"source,omitempty"`
	// CallbackPort is the loopback port whose exact redirect URIs the
	// client was registered with, for a server that matches redirect URIs
	// exactly: logins with this client listen on it (0: any port).
	CallbackPort int `json:"callback_port,omitempty"`
	// RegistrationClientURI and RegistrationAccessToken are returned by
	// RFC 7591 §3.2.1 registration when the server supports management.
	RegistrationClientURI   string `json:"registration_client_uri,omitempty"`
	RegistrationAccessToken string `json:"registration_access_token,omitempty"`
	// Rejected is set once the authorization server answered invalid_client
	// for this client (RFC 6749 §5.2), as one does after forgetting a
	// dynamically registered client: FindRegistration no longer offers it.
	Rejected bool `json:"rejected,omitempty"`
}

// Credential is one stored token set (RFC 6749 §5.1) with what is needed to
// refresh (§6) and revoke (RFC 7009) it.
type Credential struct {
	Key
	// Target is what the user logged in to (a ws://, stdio: or http(s)://
	// target) when it differs from Resource; commands find credentials by it.
	Target string `json:"target,omitempty"`
	// NoResource records a login without the RFC 8707 resource parameter
	// (login --no-resource), so refreshes leave it out too.
	NoResource bool `json:"no_resource,omitempty"`
	// Grant is the grant that got the token when it is renewed by running
	// it again rather than by a refresh token: "client_credentials"
	// (RFC 6749 §4.4.3). Empty for the others.
	Grant string `json:"grant,omitempty"`
	// AssertionSource is where a JWT bearer credential's assertion is read
	// again at renewal: "file:PATH" or "env:NAME" (never the assertion).
	AssertionSource string `json:"assertion_source,omitempty"`
	// IdPTokenEndpoint and IdPClientID are the enterprise IdP of
	// enterprise-managed authorization, where the identity assertion is
	// exchanged (RFC 8693) for an ID-JAG at each renewal.
	IdPTokenEndpoint string `json:"idp_token_endpoint,omitempty"`
	IdPClientID      string `json:"idp_client_id,omitempty"`
	AccessToken      string `json:"access_token"`
	RefreshToken     string `json:"refresh_token,omitempty"`
	// RefreshExpiry is when the refresh token expires, when the token
	// response said (refresh_expires_in); zero means unknown.
	RefreshExpiry time.Time `json:"refresh_expiry,omitzero"`
	TokenType     string    `json:"token_type,omitempty"`
	// Expiry is when the access token expires; zero means unknown.
	Expiry time.Time `json:"expiry,omitzero"`
	// Obtained is when the access token was obtained (login or refresh),
	// so that Expiry - Obtained is its lifetime; zero in older stores.
	Obtained time.Time `json:"obtained,omitzero"`
	Scopes   []string  `json:"scopes,omitempty"`
	// Subject is the token's subject when known (for GitHub, the login).
	Subject string `json:"subject,omitempty"`
	// Provider labels a token of a known provider's own flow: "github" for
	// GitHub's (no RFC 8414 metadata, its own endpoints and REST API).
	Provider           string             `json:"provider,omitempty"`
	Client             ClientRegistration `json:"client"`
	TokenEndpoint      string             `json:"token_endpoint,omitempty"`
	RevocationEndpoint string             `json:"revocation_endpoint,omitempty"`
	// AllowedTargets are the targets, besides those on the resource's own
	// origin, that the user allowed to receive this credential's token
	// (login --allow-resource): web origins as wire.Origin gives them, or
	// whole stdio: targets. See commands' binding rule.
	AllowedTargets []string `json:"allowed_targets,omitempty"`
	// Rejected is the OAuth error code (RFC 6749 §5.2) with which the
	// authorization server refused this credential's refresh token or
	// client (invalid_grant, invalid_client, …): the credential is dead,
	// status shows it as rejected and no command uses it until a new login
	// replaces it.
	Rejected string `json:"rejected,omitempty"`
	// DPoPKey is the PEM private key the token is bound to (RFC 9449),
	// generated at login and never exported; empty for a bearer token.
	DPoPKey string `json:"dpop_key,omitempty"`
	// UpdatedAt is set by Put to the time of the write.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// ErrNotFound is returned by Get when no credential is stored for the key.
var ErrNotFound = errors.New("no stored credential")

// Store holds credentials. Implementations are safe for concurrent use by
// goroutines and, except memory, by processes.
type Store interface {
	// Get returns the credential for k, or ErrNotFound.
	Get(ctx context.Context, k Key) (*Credential, error)
	// Put stores c under c.Key, replacing any credential there, and sets its
	// UpdatedAt in the store (c itself is not modified).
	Put(ctx context.Context, c *Credential) error
	// Delete removes the credential for k; it is no error when there is none.
	Delete(ctx context.Context, k Key) error
	// List returns every credential, sorted by resource, issuer, scheme id.
	List(ctx context.Context) ([]*Credential, error)
	// Lock takes an exclusive inter-process lock for k (serialises refreshes
	// so two processes never burn one refresh token); it waits until ctx is
	// done.
	Lock(ctx context.Context, k Key) (unlock func(), err error)
	// Kind is "keyring", "file" or "memory".
	Kind() string
	// Location describes where the credentials are, for humans.
	Location() string
}

// Backend kinds accepted by Open and Resolve.
const (
	KindKeyring = "keyring"
	KindFile    = "file"
	KindMemory  = "memory"
)

// Environment variables read by ConfigDir and Resolve.
const (
	EnvConfigDir = "AGENTAUTH_CONFIG_DIR"
	EnvStore     = "AGENTAUTH_STORE"
)

// ConfigDir returns $AGENTAUTH_CONFIG_DIR, else os.UserConfigDir()/agentauth.
// It does not create the directory.
func ConfigDir() (string, error) {
	if d := os.Getenv(EnvConfigDir); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the config directory: %w\nSet %s to choose one.", err, EnvConfigDir)
	}
	return filepath.Join(d, "agentauth"), nil
}

// Open returns the store of the given kind (keyring, file or memory) whose
// files live in configDir. It touches neither the disk nor the keyring.
func Open(kind, configDir string) (Store, error) {
	switch kind {
	case KindKeyring:
		return newKeyring(configDir, sessionRing{osRing{}}, keyringTimeout), nil
	case KindFile:
		return newFile(configDir), nil
	case KindMemory:
		return NewMemory(), nil
	}
	return nil, fmt.Errorf("cannot open store: unknown kind %q (want keyring, file or memory)", kind)
}

// rememberedFile holds the backend choice, so later commands use the same one.
const rememberedFile = "store"

// Resolve decides the backend: explicit flag value > $AGENTAUTH_STORE > the
// choice remembered in configDir > "keyring". An explicit choice is
// remembered in configDir (the non-secret file "store") once made.
func Resolve(flagValue, configDir string) (string, error) {
	return ResolveFor(flagValue, configDir, true)
}

// ResolveFor is Resolve that remembers an explicit choice only when
// remember is set: a command that only reads (status, token, call) uses
// --store for itself and leaves the remembered choice alone, so that the
// next command still finds the credentials where they are.
func ResolveFor(flagValue, configDir string, remember bool) (string, error) {
	choice, source := flagValue, "--store"
	if choice == "" {
		choice, source = os.Getenv(EnvStore), EnvStore
	}
	path := filepath.Join(configDir, rememberedFile)
	if choice == "" {
		kind, err := readRemembered(path)
		if errors.Is(err, os.ErrNotExist) {
			return KindKeyring, nil
		}
		return kind, err
	}
	if choice != KindKeyring && choice != KindFile {
		return "", fmt.Errorf("invalid %s value %q: want keyring or file", source, choice)
	}
	if kind, err := readRemembered(path); !remember || err == nil && kind == choice {
		return choice, nil
	}
	if err := ensureDir(configDir); err != nil {
		return "", err
	}
	if err := writeFileAtomic(path, []byte(choice+"\n")); err != nil {
		return "", fmt.Errorf("cannot remember the store choice: %w", err)
	}
	return choice, nil
}

// OtherHolds counts the credentials of the backend that is not kind, in
// configDir: the file store's, or the keyring's index (never the keyring
// itself: no D-Bus call, no unlock prompt). For the warning of a command
// that finds its store empty.
func OtherHolds(kind, configDir string) (other string, n int) {
	switch kind {
	case KindKeyring:
		st, err := Open(KindFile, configDir)
		if err != nil {
			return KindFile, 0
		}
		creds, _ := st.List(context.Background())
		return KindFile, len(creds)
	case KindFile:
		keys, _ := newKeyring(configDir, nil, 0).readIndex()
		return KindKeyring, len(keys)
	}
	return "", 0
}

// IndexedResources are the resources the keyring's index names (it holds
// no secret; the keyring is not opened).
func IndexedResources(configDir string) []string {
	keys, _ := newKeyring(configDir, nil, 0).readIndex()
	var out []string
	for _, k := range keys {
		out = append(out, k.Resource)
	}
	return out
}

func readRemembered(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("cannot read the remembered store choice: %w", err)
	}
	kind := strings.TrimSpace(string(b))
	if kind != KindKeyring && kind != KindFile {
		return "", fmt.Errorf("cannot read the remembered store choice: %s holds %q, want keyring or file\nChoose again with --store keyring or --store file.", path, kind)
	}
	return kind, nil
}

// FindRegistration returns the most recently stored client registration for
// issuer, if any, so a login can reuse it instead of registering again. A
// client the issuer rejected (ClientRegistration.Rejected, on any of its
// credentials) is never returned: an authorization server that forgot a
// client shows the user an error page instead of redirecting back
// (RFC 6749 §4.1.2.1), so a login reusing it could only time out.
func FindRegistration(ctx context.Context, s Store, issuer string) (*ClientRegistration, bool) {
	creds, err := s.List(ctx)
	if err != nil {
		return nil, false
	}
	if rec, err := s.Get(ctx, RegistrationKey(issuer)); err == nil && rec.Client.ClientID != "" {
		creds = append(creds, rec)
	}
	rejected := map[string]bool{}
	for _, c := range creds {
		if c.Issuer == issuer && c.Client.Rejected {
			rejected[c.Client.ClientID] = true
		}
	}
	var best *Credential
	for _, c := range creds {
		if c.Issuer == issuer && c.Client.ClientID != "" && !rejected[c.Client.ClientID] && (best == nil || c.UpdatedAt.After(best.UpdatedAt)) {
			best = c
		}
	}
	if best == nil {
		return nil, false
	}
	reg := best.Client
	return &reg, true
}

// keyHash names a key in file names and keyring entries.
func keyHash(k Key) string {
	b, _ := json.Marshal([]string{k.Resource, k.Issuer, k.SchemeID})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func checkKey(k Key) error {
	if k.Resource == "" && k.SchemeID != "" {
		return errors.New("cannot store a credential without a resource")
	}
	if k.Issuer == "" {
		return errors.New("cannot store a credential without an issuer")
	}
	return nil
}

func clone(c *Credential) *Credential {
	d := *c
	d.Scopes = slices.Clone(c.Scopes)
	d.AllowedTargets = slices.Clone(c.AllowedTargets)
	return &d
}

// stamped is the copy of c that Put stores.
func stamped(c *Credential) *Credential {
	d := clone(c)
	d.UpdatedAt = time.Now().UTC()
	return d
}

func compareKeys(a, b Key) int {
	return cmp.Or(
		strings.Compare(a.Resource, b.Resource),
		strings.Compare(a.Issuer, b.Issuer),
		strings.Compare(a.SchemeID, b.SchemeID),
	)
}

func sortCredentials(cs []*Credential) {
	slices.SortFunc(cs, func(a, b *Credential) int { return compareKeys(a.Key, b.Key) })
}
