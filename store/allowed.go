package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
)

// allowedFile remembers, per target, the resources on other origins the
// user let it receive tokens for (login --allow-resource). It holds no
// secret and grants nothing: a credential carries its own AllowedTargets.
// It outlives the credentials (token-revoke, logout) so that the login a
// hint suggests for the target keeps the --allow-resource it needs.
const allowedFile = "allowed-resources.json"

// maxAllowedTargets bounds the file.
const maxAllowedTargets = 256

// RememberAllowed records that target may receive tokens for resource.
// Errors are ignored by callers: it only feeds hints.
func RememberAllowed(configDir, target, resource string) error {
	m := readAllowed(configDir)
	if slices.Contains(m[target], resource) {
		return nil
	}
	if _, ok := m[target]; !ok && len(m) >= maxAllowedTargets {
		return errors.New("too many targets remembered")
	}
	m[target] = append(m[target], resource)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := ensureDir(configDir); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(configDir, allowedFile), append(b, '\n'))
}

// AllowedFor returns the resources target was allowed to receive tokens
// for (RememberAllowed).
func AllowedFor(configDir, target string) []string {
	return readAllowed(configDir)[target]
}

func readAllowed(configDir string) map[string][]string {
	m := map[string][]string{}
	b, err := os.ReadFile(filepath.Join(configDir, allowedFile))
	if err == nil && len(b) <= 1<<20 {
		json.Unmarshal(b, &m)
	}
	return m
}
