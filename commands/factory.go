package commands

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agentauth/agentauth/client"
	"github.com/agentauth/agentauth/store"
	"github.com/agentauth/agentauth/wire"
)

// Factory holds what commands depend on, so tests can swap any of it.
type Factory struct {
	IO *IOStreams
	// HTTPClient is used for every outgoing HTTP request.
	HTTPClient *http.Client
	// Now is the clock.
	Now func() time.Time
	// Verbose is set by the global --verbose flag.
	Verbose bool

	// StoreKind is the global --store flag ("" when not given).
	StoreKind string
	// RememberStore: the command stores a login (login, call --login), so
	// an explicit --store becomes the remembered choice; the others use it
	// for themselves only.
	RememberStore bool
	// OpenStore opens the credential store; nil means the store chosen by
	// --store, $AGENTAUTH_STORE, the remembered choice, else keyring.
	OpenStore func() (store.Store, error)
	// ProbeKeyring checks that the OS keyring works (store.ProbeKeyring).
	ProbeKeyring func(context.Context) error

	// BrowserEnv is $BROWSER: a command line that opens a URL, run even
	// without a terminal (scripts and test suites set it on purpose).
	BrowserEnv string
	// OpenURL is the platform's URL opener, used only on a terminal, or
	// on a desktop for a command a desktop application starts (AppChild).
	OpenURL func(url string) error
	// AppChild is set by a command that desktop applications start
	// (proxy, started by an MCP client): its stdout and stderr are the
	// application's pipes, not a terminal, yet a user sits at the desktop.
	AppChild bool

	storeOnce sync.Once
	store     store.Store
	storeErr  error
	client    *client.Client
	ui        *termUI
}

// NewFactory returns the production dependencies.
func NewFactory() *Factory {
	return &Factory{
		IO:           SystemIO(),
		HTTPClient:   &http.Client{Timeout: 30 * time.Second, CheckRedirect: wire.CheckRedirect},
		Now:          time.Now,
		ProbeKeyring: store.ProbeKeyring,
		BrowserEnv:   os.Getenv("BROWSER"),
		OpenURL:      platformOpenURL,
	}
}

// Logger returns the diagnostic logger on stderr: debug level with
// --verbose, warnings otherwise. Never log a secret through it.
func (f *Factory) Logger() *slog.Logger {
	level := slog.LevelWarn
	if f.Verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: level}))
}

// Store returns the credential store, opened once: --store, else
// $AGENTAUTH_STORE, else the choice remembered in the config directory,
// else keyring (store.Resolve). It touches neither the disk nor the keyring
// beyond remembering an explicit choice.
func (f *Factory) Store() (store.Store, error) {
	f.storeOnce.Do(func() {
		if f.OpenStore != nil {
			f.store, f.storeErr = f.OpenStore()
			return
		}
		f.store, f.storeErr = openStore(f.StoreKind, f.RememberStore)
	})
	return f.store, f.storeErr
}

func openStore(flagValue string, remember bool) (store.Store, error) {
	dir, err := store.ConfigDir()
	if err != nil {
		return nil, err
	}
	kind, err := store.ResolveFor(flagValue, dir, remember)
	if err != nil {
		return nil, err
	}
	// The copies the keyring refused (store.OpenFallback) are found by
	// every command.
	return store.OpenWithFallback(kind, dir)
}

// Client returns the client core over these dependencies, made once (it
// remembers that the keyring was checked).
func (f *Factory) Client() *client.Client {
	if f.client == nil {
		f.ui = &termUI{io: f.IO, now: f.Now}
		f.client = &client.Client{
			HTTPClient: client.WithDPoP(f.HTTPClient), Now: f.Now, Logger: f.Logger(),
			Store: f.Store, Fallback: store.OpenFallback, ProbeKeyring: f.ProbeKeyring,
			Browser: f.Browser(), UI: f.ui, Stderr: agentOutput(f.IO.ErrOut), Version: Version,
		}
	}
	return f.client
}
