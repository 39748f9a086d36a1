package flows

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

func TestRegister(t *testing.T) {
	tests := []struct {
		name       string
		req        RegistrationRequest
		status     int
		reply      map[string]any
		wantGrants string
		wantClient Client
		wantErr    string
	}{
		{"public client", RegistrationRequest{}, 201, map[string]any{"client_id": "c-1"},
			"authorization_code refresh_token", Client{ID: "c-1", AuthMethod: AuthMethodNone}, ""},
		{"device grant asked; the AS makes it confidential", RegistrationRequest{Device: true}, 201,
			map[string]any{"client_id": "c-2", "client_secret": "sec", "token_endpoint_auth_method": "client_secret_post"},
			"authorization_code refresh_token " + wire.GrantDeviceCode, Client{ID: "c-2", Secret: "sec", AuthMethod: AuthMethodClientSecretPost}, ""},
		{"secret without a method means basic", RegistrationRequest{}, 200, map[string]any{"client_id": "c-3", "client_secret": "sec"},
			"authorization_code refresh_token", Client{ID: "c-3", Secret: "sec", AuthMethod: AuthMethodClientSecretBasic}, ""},
		{"refused", RegistrationRequest{}, 400, map[string]any{"error": "invalid_redirect_uri", "error_description": "loopback not allowed"},
			"authorization_code refresh_token", Client{}, "invalid_redirect_uri: loopback not allowed"},
		{"no client id", RegistrationRequest{}, 201, map[string]any{}, "authorization_code refresh_token", Client{}, "no client_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]any
			var contentType string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				contentType = r.Header.Get("Content-Type")
				_ = json.NewDecoder(r.Body).Decode(&got)
				writeJSON(w, tt.status, tt.reply)
			}))
			defer srv.Close()
			reg, err := Register(context.Background(), nil, srv.URL+"/register", tt.req)
			if contentType != "application/json" || got["client_name"] != "agentauth" || got["token_endpoint_auth_method"] != "none" ||
				join(got["redirect_uris"]) != "http://127.0.0.1/callback http://localhost/callback" ||
				join(got["grant_types"]) != tt.wantGrants || join(got["response_types"]) != "code" {
				t.Errorf("registration request (%s) = %v", contentType, got)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
				}
				if tt.status == 400 && !errors.Is(err, ErrRegistrationRefused) {
					t.Errorf("error %v is not ErrRegistrationRefused", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Register: %v", err)
			}
			if reg.Client() != tt.wantClient {
				t.Errorf("Client() = %+v, want %+v", reg.Client(), tt.wantClient)
			}
		})
	}
	if _, err := Register(context.Background(), nil, "", RegistrationRequest{}); err == nil {
		t.Error("Register without an endpoint succeeded")
	}
	if _, err := Register(context.Background(), nil, "javascript:x", RegistrationRequest{}); !errors.Is(err, ErrUnsupportedScheme) {
		t.Errorf("Register(javascript:) = %v", err)
	}
}

func join(v any) string {
	list, _ := v.([]any)
	var out []string
	for _, s := range list {
		out = append(out, s.(string))
	}
	return strings.Join(out, " ")
}
