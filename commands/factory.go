package commands

import (
	"log/slog"
	"net/http"
	"time"
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
}

// NewFactory returns the production dependencies.
func NewFactory() *Factory {
	return &Factory{
		IO:         SystemIO(),
		HTTPClient: &http.Client{Timeout: 30 * time.Second},
		Now:        time.Now,
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
