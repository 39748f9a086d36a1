package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name                  string
		flag, env, remembered string // remembered "" = no file
		want, wantRemembered  string // wantRemembered "" = no file afterwards
		wantErr               string
	}{
		{name: "default is keyring and is not remembered", want: "keyring"},
		{name: "flag wins and is remembered", flag: "file", want: "file", wantRemembered: "file"},
		{name: "env is used and remembered", env: "file", want: "file", wantRemembered: "file"},
		{name: "flag beats env", flag: "keyring", env: "file", want: "keyring", wantRemembered: "keyring"},
		{name: "remembered choice is used", remembered: "file", want: "file", wantRemembered: "file"},
		{name: "env beats remembered and replaces it", env: "keyring", remembered: "file", want: "keyring", wantRemembered: "keyring"},
		{name: "flag beats remembered and replaces it", flag: "file", remembered: "keyring", want: "file", wantRemembered: "file"},
		{name: "explicit choice repairs a bad remembered file", flag: "file", remembered: "vault", want: "file", wantRemembered: "file"},
		{name: "bad flag", flag: "memory", wantErr: `invalid --store value "memory": want keyring or file`},
		{name: "bad env", env: "vault", wantErr: `invalid AGENTAUTH_STORE value "vault": want keyring or file`},
		{name: "bad remembered file", remembered: "vault", wantRemembered: "vault", wantErr: `holds "vault", want keyring or file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvStore, tt.env)
			dir := filepath.Join(t.TempDir(), "config")
			path := filepath.Join(dir, "store")
			if tt.remembered != "" {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.remembered+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Resolve(tt.flag, dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve = %q, %v; want error %q", got, err, tt.wantErr)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, tt.want)
			}
			b, err := os.ReadFile(path)
			switch {
			case tt.wantRemembered == "" && err == nil:
				t.Errorf("remembered %q, want nothing written", b)
			case tt.wantRemembered != "" && strings.TrimSpace(string(b)) != tt.wantRemembered:
				t.Errorf("remembered %q (%v), want %q", b, err, tt.wantRemembered)
			}
		})
	}
}

func TestResolveRemembersForLaterRuns(t *testing.T) {
	t.Setenv(EnvStore, "")
	dir := filepath.Join(t.TempDir(), "config")
	if _, err := Resolve("file", dir); err != nil {
		t.Fatal(err)
	}
	if got, err := Resolve("", dir); err != nil || got != "file" {
		t.Errorf("later Resolve = %q, %v; want the remembered file", got, err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, "store"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want mode %v", path, fi.Mode(), err, want)
		}
	}
}

func TestConfigDir(t *testing.T) {
	t.Setenv(EnvConfigDir, "/somewhere/agentauth-test")
	if got, err := ConfigDir(); err != nil || got != "/somewhere/agentauth-test" {
		t.Errorf("ConfigDir with %s = %q, %v", EnvConfigDir, got, err)
	}
	t.Setenv(EnvConfigDir, "")
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	if got, err := ConfigDir(); err != nil || got != "/xdg/agentauth" {
		t.Errorf("ConfigDir with XDG_CONFIG_HOME = %q, %v; want /xdg/agentauth", got, err)
	}
}
