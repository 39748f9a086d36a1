package store

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

// ErrNoSessionBus is matched when there is no D-Bus session bus to reach a
// Secret Service keyring through (SSH, containers, CI).
var ErrNoSessionBus = errors.New("there is no D-Bus session bus here (DBUS_SESSION_BUS_ADDRESS is not set, as over SSH or in a container), so no Secret Service keyring can be reached")

// sessionRing is the OS keyring behind a check that never lets go-keyring
// start anything: on Linux and the BSDs, godbus "autolaunches" a
// dbus-daemon (which then activates gnome-keyring-daemon) when there is no
// session bus, and both outlive agentauth. Without a session bus
// (DBUS_SESSION_BUS_ADDRESS, or the systemd user bus at
// $XDG_RUNTIME_DIR/bus, the two places godbus looks before autolaunching,
// or, with neither variable set, at /run/user/UID/bus: see userBus),
// every call fails with ErrNoSessionBus instead.
type sessionRing struct{ ring ring }

func (s sessionRing) Set(user, secret string) error {
	if err := sessionBus(); err != nil {
		return err
	}
	return s.ring.Set(user, secret)
}

func (s sessionRing) Get(user string) (string, error) {
	if err := sessionBus(); err != nil {
		return "", err
	}
	return s.ring.Get(user)
}

func (s sessionRing) Delete(user string) error {
	if err := sessionBus(); err != nil {
		return err
	}
	return s.ring.Delete(user)
}

// sessionBus returns ErrNoSessionBus where the keyring is the Secret
// Service and no session bus exists.
func sessionBus() error {
	switch runtime.GOOS {
	case "darwin", "windows", "ios", "android":
		return nil
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		return nil
	}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		if fi, err := os.Stat(filepath.Join(dir, "bus")); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return nil
		}
		return ErrNoSessionBus
	}
	if bus := userBus(); bus != "" {
		// godbus reads the variable on every connection it makes.
		os.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+dbus.EscapeBusAddressValue(bus))
		return nil
	}
	return ErrNoSessionBus
}

// runUserDir holds each user's runtime directory where systemd-logind
// makes them (/run/user/UID, which pam_systemd puts in $XDG_RUNTIME_DIR),
// with the user's session bus socket "bus" in it.
var runUserDir = "/run/user"

// userBus is the user's session bus socket at runUserDir/UID/bus, when it
// is one and is the user's own; else "". MCP clients start `agentauth
// proxy` with a reduced environment (the TypeScript SDK passes HOME,
// LOGNAME, PATH, SHELL, TERM and USER: DEFAULT_INHERITED_ENV_VARS in
// @modelcontextprotocol/sdk 1.32.2 dist/esm/client/stdio.js), so neither
// DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR reaches it, while the
// desktop's keyring is there on the bus at the standard place.
func userBus() string {
	p := filepath.Join(runUserDir, strconv.Itoa(os.Getuid()), "bus")
	fi, err := os.Stat(p)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || !ownedBySelf(fi) {
		return ""
	}
	return p
}

// plainKeyringError words the Secret Service's errors for people, with
// the remedy that fits: unlock a locked keyring, start a Secret Service,
// or use the file store.
func plainKeyringError(err error) (msg, fix string) {
	const fileFix = "To store credentials in a file instead, use --store file (or set " + EnvStore + "=file)."
	text := err.Error()
	switch {
	case errors.Is(err, ErrNoSessionBus):
		return text, fileFix + "\nTo use a keyring here, run agentauth under dbus-run-session with an unlocked gnome-keyring-daemon."
	case strings.Contains(text, "failed to unlock") || strings.Contains(text, "prompt") && strings.Contains(text, "dismissed"):
		return "the OS keyring is locked (" + text + ")",
			"Unlock it (log in to the desktop, open Passwords and Keys, or run: gnome-keyring-daemon --unlock) and try again; or " + lowerFirst(fileFix)
	case strings.Contains(text, "org.freedesktop.secrets") || strings.Contains(text, "ServiceUnknown"):
		return "no Secret Service (gnome-keyring, KeePassXC) runs on this D-Bus session (" + text + ")",
			"Start one (gnome-keyring-daemon --start --components=secrets) and try again; or " + lowerFirst(fileFix)
	case errors.Is(err, ErrKeyringTimeout):
		return text + " (a locked keyring waiting for its password prompt?)",
			"Unlock the keyring and try again; or " + lowerFirst(fileFix)
	}
	return text, fileFix
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }
