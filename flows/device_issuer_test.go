package flows

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/issuer"
)

// TestDeviceCodeEmbeddedIssuer runs the device grant (x/oauth2) against
// agentauth's own issuer, auto-approving: the resource goes on the device
// authorization request and on every token poll (seen by a recorder in
// front of the issuer), and the token is for it.
func TestDeviceCodeEmbeddedIssuer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	iss, err := issuer.New(issuer.Options{Issuer: origin, AutoApprove: true, DeviceInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	forms := map[string][]url.Values{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
			body, _ := io.ReadAll(r.Body)
			form, _ := url.ParseQuery(string(body))
			mu.Lock()
			forms[r.URL.Path] = append(forms[r.URL.Path], form)
			mu.Unlock()
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		iss.Handler().ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)

	ctx := context.Background()
	md, err := FetchAuthServerMetadata(ctx, nil, origin)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := Register(ctx, nil, md.RegistrationEndpoint, RegistrationRequest{Device: true})
	if err != nil {
		t.Fatal(err)
	}
	resource := origin + "/mcp"
	approved := make(chan error, 1)
	tok, err := DeviceCode(ctx, nil, DeviceRequest{Metadata: md, Client: Client{ID: reg.ClientID, Secret: reg.ClientSecret, AuthMethod: reg.TokenEndpointAuthMethod},
		Scopes: []string{"agent:use"}, Resource: resource,
		ShowCode: func(p DeviceCodePrompt) {
			go func() { // opening the complete URI approves the code
				resp, err := http.Get(p.VerificationURIComplete)
				if err == nil {
					resp.Body.Close()
				}
				approved <- err
			}()
		},
	})
	if err != nil {
		t.Fatalf("DeviceCode: %v", err)
	}
	if err := <-approved; err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken == "" || strings.Join(tok.Scopes, " ") != "agent:use" {
		t.Errorf("token %s", tok)
	}
	mu.Lock()
	defer mu.Unlock()
	if f := forms["/device_authorization"]; len(f) != 1 || f[0].Get("resource") != resource {
		t.Errorf("device authorization requests %v", f)
	}
	polls := forms["/token"]
	if len(polls) == 0 {
		t.Fatal("no token poll")
	}
	for _, f := range polls {
		if f.Get("resource") != resource || f.Get("device_code") == "" {
			t.Errorf("token poll %v", f)
		}
	}
}
