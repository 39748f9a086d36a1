package host

import (
	"io"
	"log/slog"
)

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}

// testResource is the host's resource in the tests' configs.
const testResource = "http://127.0.0.1:7777/mcp"
