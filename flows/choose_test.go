package flows

import (
	"errors"
	"strings"
	"testing"
)

func TestChooseScopes(t *testing.T) {
	tests := []struct {
		name      string
		challenge string
		supported []string
		extra     []string
		want      string
	}{
		{"challenge wins", "files:read  files:write", []string{"a", "b"}, nil, "files:read files:write"},
		{"scopes_supported next", "", []string{"a", "b"}, nil, "a b"},
		{"extra only", "", nil, []string{"x"}, "x"},
		{"none: no invented openid or profile", "", nil, nil, ""},
		{"extra always added, deduplicated, order kept", "a b", []string{"z"}, []string{"b", "c", "a c", "d"}, "a b c d"},
		{"duplicates within the source", "", []string{"a", "a", "b"}, nil, "a b"},
	}
	for _, tt := range tests {
		got := strings.Join(ChooseScopes(tt.challenge, tt.supported, tt.extra), " ")
		if got != tt.want {
			t.Errorf("%s: ChooseScopes = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestChooseAuthMethod(t *testing.T) {
	tests := []struct {
		supported []string
		hasSecret bool
		want      string
		wantErr   error
	}{
		{nil, false, AuthMethodNone, nil},
		{[]string{"client_secret_basic"}, false, AuthMethodNone, nil},
		{nil, true, AuthMethodClientSecretBasic, nil}, // RFC 8414 default
		{[]string{"client_secret_post", "client_secret_basic"}, true, AuthMethodClientSecretBasic, nil},
		{[]string{"private_key_jwt", "client_secret_post"}, true, AuthMethodClientSecretPost, nil},
		{[]string{"none", "private_key_jwt"}, true, "", ErrNoAuthMethod},
	}
	for _, tt := range tests {
		got, err := ChooseAuthMethod(tt.supported, tt.hasSecret)
		if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("ChooseAuthMethod(%q, %v) = %q, %v; want %q, %v", tt.supported, tt.hasSecret, got, err, tt.want, tt.wantErr)
		}
	}
	_, err := ChooseAuthMethod([]string{"none", "private_key_jwt"}, true)
	if err == nil || !strings.Contains(err.Error(), "private_key_jwt") {
		t.Errorf("error %v does not name what the server accepts", err)
	}
}
