package flows

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentauth/agentauth/wire"
)

// resourceServer is an MCP endpoint at /mcp answering 401 with challenge,
// plus whatever documents the test adds to mux.
type resourceServer struct {
	srv  *httptest.Server
	mux  *http.ServeMux
	mu   sync.Mutex
	hits []string
}

func newResourceServer(t *testing.T, challenge string) *resourceServer {
	t.Helper()
	rs := &resourceServer{mux: http.NewServeMux()}
	rs.mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		if challenge != "" {
			w.Header().Set("WWW-Authenticate", strings.ReplaceAll(challenge, "{{URL}}", rs.srv.URL))
		}
		w.WriteHeader(http.StatusUnauthorized)
	})
	rs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.hits = append(rs.hits, r.Method+" "+r.URL.Path)
		rs.mu.Unlock()
		rs.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.srv.Close)
	return rs
}

// prm serves a protected resource metadata document at path.
func (rs *resourceServer) prm(path, resource string, servers ...string) {
	rs.mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, wire.ProtectedResourceMetadata{
			Resource: strings.ReplaceAll(resource, "{{URL}}", rs.srv.URL), AuthorizationServers: servers, ScopesSupported: []string{"agent:use"}})
	})
}

func TestDiscoverResourceOrder(t *testing.T) {
	const as = "http://127.0.0.1:9/issuer"
	tests := []struct {
		name      string
		challenge string
		setup     func(rs *resourceServer)
		wantMDURL string // relative to the server, "" for the legacy fallback
		wantScope string
	}{
		{"WWW-Authenticate resource_metadata",
			`Bearer resource_metadata="{{URL}}/custom/prm", scope="agent:use agent:admin", error="invalid_token"`,
			func(rs *resourceServer) {
				rs.prm("/custom/prm", "{{URL}}/mcp", as)
				rs.prm("/.well-known/oauth-protected-resource/mcp", "{{URL}}/other", as) // must not be used
			},
			"/custom/prm", "agent:use agent:admin"},
		{"path-aware well-known", `Bearer realm="mcp"`,
			func(rs *resourceServer) {
				rs.prm("/.well-known/oauth-protected-resource/mcp", "{{URL}}/mcp", as)
				rs.prm("/.well-known/oauth-protected-resource", "{{URL}}/other", as)
			},
			"/.well-known/oauth-protected-resource/mcp", ""},
		{"root well-known after a path-aware 404, resource a path prefix", "",
			func(rs *resourceServer) { rs.prm("/.well-known/oauth-protected-resource", "{{URL}}/", as) },
			"/.well-known/oauth-protected-resource", ""},
		{"root well-known, resource the bare origin", "",
			func(rs *resourceServer) { rs.prm("/.well-known/oauth-protected-resource", "{{URL}}", as) },
			"/.well-known/oauth-protected-resource", ""},
		{"no metadata at all: 2025-03-26 fallback", "", func(*resourceServer) {}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newResourceServer(t, tt.challenge)
			tt.setup(rs)
			target := rs.srv.URL + "/mcp"
			d, err := DiscoverResource(context.Background(), nil, target)
			if err != nil {
				t.Fatalf("DiscoverResource: %v", err)
			}
			if d.Status != http.StatusUnauthorized || d.Scope != tt.wantScope || d.Target != target {
				t.Errorf("status %d scope %q target %q", d.Status, d.Scope, d.Target)
			}
			if rs.hits[0] != "POST /mcp" {
				t.Errorf("first request was %s, want the unauthenticated POST /mcp", rs.hits[0])
			}
			if tt.wantMDURL == "" {
				if !d.Legacy || d.Warning == "" || d.Metadata != nil || d.Resource != target ||
					len(d.AuthorizationServers) != 1 || d.AuthorizationServers[0] != rs.srv.URL {
					t.Fatalf("legacy fallback: %+v", d)
				}
				want := []string{"POST /mcp", "GET /.well-known/oauth-protected-resource/mcp", "GET /.well-known/oauth-protected-resource"}
				if strings.Join(rs.hits, ",") != strings.Join(want, ",") {
					t.Errorf("requests %q, want %q", rs.hits, want)
				}
				return
			}
			if d.Legacy || d.Warning != "" {
				t.Errorf("not a fallback, yet Legacy=%v Warning=%q", d.Legacy, d.Warning)
			}
			if d.MetadataURL != rs.srv.URL+tt.wantMDURL {
				t.Errorf("MetadataURL = %q, want %q", d.MetadataURL, rs.srv.URL+tt.wantMDURL)
			}
			if d.Resource != d.Metadata.Resource || len(d.AuthorizationServers) != 1 || d.AuthorizationServers[0] != as {
				t.Errorf("resource %q servers %q", d.Resource, d.AuthorizationServers)
			}
			if strings.Join(d.ScopesSupported(), " ") != "agent:use" {
				t.Errorf("ScopesSupported() = %q", d.ScopesSupported())
			}
		})
	}
}

// A resource that needs no token may answer the probe with an event
// stream that never ends: only its status and headers are read.
func TestDiscoverResourceOpenStream(t *testing.T) {
	rs := newResourceServer(t, "")
	wait := blocking(t)
	rs.mux.HandleFunc("POST /stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		wait(w, r)
	})
	rs.prm("/.well-known/oauth-protected-resource/stream", "{{URL}}/stream", "http://127.0.0.1:9")
	d, err := DiscoverResource(context.Background(), nil, rs.srv.URL+"/stream", WithFetchTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != http.StatusOK || d.Resource != rs.srv.URL+"/stream" {
		t.Fatalf("status %d resource %q", d.Status, d.Resource)
	}
}

func TestDiscoverResourceChallengeFields(t *testing.T) {
	rs := newResourceServer(t, `Bearer error="insufficient_scope", error_description="needs \"admin\"", scope="agent:admin"`)
	rs.prm("/.well-known/oauth-protected-resource/mcp", "{{URL}}/mcp", "http://127.0.0.1:9")
	d, err := DiscoverResource(context.Background(), nil, rs.srv.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if d.Error != "insufficient_scope" || d.ErrorDescription != `needs "admin"` || d.Scope != "agent:admin" {
		t.Fatalf("challenge fields: %q %q %q", d.Error, d.ErrorDescription, d.Scope)
	}
}

// blocking returns a handler that answers only when the test ends.
func blocking(t *testing.T) http.HandlerFunc {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) }) // runs before the server's Close
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}
}

func TestDiscoverResourceChecks(t *testing.T) {
	const as = "http://127.0.0.1:9"
	tests := []struct {
		name      string
		challenge string
		setup     func(t *testing.T, rs *resourceServer)
		want      error
		wantText  []string
	}{
		{"resource mismatch", "", func(t *testing.T, rs *resourceServer) {
			rs.prm("/.well-known/oauth-protected-resource/mcp", "https://other.example/mcp", as)
		}, ErrResourceMismatch, []string{"https://other.example/mcp", "/mcp\""}},
		{"resource with a trailing slash added", "", func(t *testing.T, rs *resourceServer) {
			rs.prm("/.well-known/oauth-protected-resource/mcp", "{{URL}}/mcp/", as)
		}, ErrResourceMismatch, nil},
		{"resource prefix not at a segment boundary", "", func(t *testing.T, rs *resourceServer) {
			rs.prm("/.well-known/oauth-protected-resource/mcp", "{{URL}}/m", as)
		}, ErrResourceMismatch, nil},
		{"resource on another port", "", func(t *testing.T, rs *resourceServer) {
			rs.prm("/.well-known/oauth-protected-resource/mcp", "http://127.0.0.1:1/mcp", as)
		}, ErrResourceMismatch, nil},
		{"resource_metadata that is missing is not skipped", `Bearer resource_metadata="{{URL}}/gone"`, func(t *testing.T, rs *resourceServer) {
			rs.prm("/.well-known/oauth-protected-resource/mcp", "{{URL}}/mcp", as)
		}, nil, []string{"404", "/gone"}},
		{"resource_metadata javascript:", `Bearer resource_metadata="javascript:alert(1)"`, func(*testing.T, *resourceServer) {},
			ErrUnsupportedScheme, []string{"javascript"}},
		{"resource_metadata data:", `Bearer resource_metadata="data:application/json,{}"`, func(*testing.T, *resourceServer) {},
			ErrUnsupportedScheme, []string{"data"}},
		{"resource_metadata over http off loopback", `Bearer resource_metadata="http://metadata.example/prm"`, func(*testing.T, *resourceServer) {},
			ErrInsecureHTTP, []string{"http://metadata.example/prm"}},
		{"redirect to http off loopback", "", func(t *testing.T, rs *resourceServer) {
			rs.mux.Handle("GET /.well-known/oauth-protected-resource/mcp", http.RedirectHandler("http://metadata.example/prm", http.StatusFound))
		}, ErrInsecureHTTP, nil},
		{"authorization server javascript:", "", func(t *testing.T, rs *resourceServer) {
			rs.prm("/.well-known/oauth-protected-resource/mcp", "{{URL}}/mcp", "javascript:alert(1)")
		}, ErrUnsupportedScheme, nil},
		{"no authorization server", "", func(t *testing.T, rs *resourceServer) {
			rs.prm("/.well-known/oauth-protected-resource/mcp", "{{URL}}/mcp")
		}, ErrNoAuthorizationServers, nil},
		{"server error is not a missing document", "", func(t *testing.T, rs *resourceServer) {
			rs.mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "down", http.StatusServiceUnavailable)
			})
			rs.prm("/.well-known/oauth-protected-resource", "{{URL}}/mcp", as)
		}, nil, []string{"503"}},
		{"oversize document", "", func(t *testing.T, rs *resourceServer) {
			rs.mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"resource":"` + strings.Repeat("x", MaxBodySize) + `"}`))
			})
		}, ErrResponseTooLarge, nil},
		{"document that never comes", "", func(t *testing.T, rs *resourceServer) {
			rs.mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", blocking(t))
		}, ErrTimeout, nil},
		{"not JSON", "", func(t *testing.T, rs *resourceServer) {
			rs.mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte("<html>"))
			})
		}, nil, []string{"not a JSON document"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newResourceServer(t, tt.challenge)
			tt.setup(t, rs)
			d, err := DiscoverResource(context.Background(), nil, rs.srv.URL+"/mcp", WithFetchTimeout(200*time.Millisecond))
			if err == nil {
				t.Fatalf("DiscoverResource succeeded: %+v", d)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("error %q is not %q", err, tt.want)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestDiscoverResourceRefusesTarget(t *testing.T) {
	for target, want := range map[string]error{
		"http://mcp.example/mcp": ErrInsecureHTTP,
		"javascript:alert(1)":    ErrUnsupportedScheme,
		"/mcp":                   ErrInvalidURL,
		"https://:":              ErrInvalidURL, // would reach this machine's port 443
		"https://:8443/mcp":      ErrInvalidURL,
	} {
		if _, err := DiscoverResource(context.Background(), nil, target); !errors.Is(err, want) {
			t.Errorf("DiscoverResource(%q) = %v, want %v", target, err, want)
		}
	}
}

// authServer serves the given documents (path → metadata) and records the
// paths asked for.
func authServer(t *testing.T, docs map[string]func(base string) any) (*httptest.Server, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		if doc, ok := docs[r.URL.Path]; ok {
			writeJSON(w, http.StatusOK, doc(srv.URL))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func goodMetadata(issuerPath string) func(string) any {
	return func(base string) any {
		return wire.AuthServerMetadata{Issuer: base + issuerPath, AuthorizationEndpoint: base + "/authorize",
			TokenEndpoint: base + "/token", CodeChallengeMethodsSupported: []string{"plain", "S256"}}
	}
}

func TestFetchAuthServerMetadataOrder(t *testing.T) {
	tests := []struct {
		name       string
		issuerPath string
		servedAt   string
		wantAsked  []string
	}{
		{"RFC 8414 root", "", "/.well-known/oauth-authorization-server",
			[]string{"/.well-known/oauth-authorization-server"}},
		{"OIDC root", "", "/.well-known/openid-configuration",
			[]string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}},
		{"RFC 8414 path insertion", "/tenant1", "/.well-known/oauth-authorization-server/tenant1",
			[]string{"/.well-known/oauth-authorization-server/tenant1"}},
		{"OIDC path insertion", "/tenant1", "/.well-known/openid-configuration/tenant1",
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1"}},
		{"OIDC path appended", "/tenant1", "/tenant1/.well-known/openid-configuration",
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, asked := authServer(t, map[string]func(string) any{tt.servedAt: goodMetadata(tt.issuerPath)})
			md, err := FetchAuthServerMetadata(context.Background(), nil, srv.URL+tt.issuerPath)
			if err != nil {
				t.Fatalf("FetchAuthServerMetadata: %v", err)
			}
			if md.Issuer != srv.URL+tt.issuerPath || md.TokenEndpoint != srv.URL+"/token" {
				t.Errorf("metadata = %+v", md)
			}
			if strings.Join(*asked, ",") != strings.Join(tt.wantAsked, ",") {
				t.Errorf("asked %q, want %q", *asked, tt.wantAsked)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		srv, asked := authServer(t, nil)
		_, err := FetchAuthServerMetadata(context.Background(), nil, srv.URL+"/tenant1")
		if !errors.Is(err, ErrNoAuthServerMetadata) || len(*asked) != 3 {
			t.Fatalf("error %v after asking %q", err, *asked)
		}
	})
}

func TestFetchAuthServerMetadataChecks(t *testing.T) {
	const path = "/.well-known/oauth-authorization-server"
	edit := func(f func(md *wire.AuthServerMetadata, base string)) func(string) any {
		return func(base string) any {
			md := goodMetadata("")(base).(wire.AuthServerMetadata)
			f(&md, base)
			return md
		}
	}
	tests := []struct {
		name     string
		doc      func(string) any
		want     error
		wantText []string
	}{
		{"issuer mismatch", edit(func(md *wire.AuthServerMetadata, base string) { md.Issuer = base + "/tenant" }),
			ErrIssuerMismatch, []string{`/tenant"`, "asked for"}},
		{"issuer of another server", edit(func(md *wire.AuthServerMetadata, base string) { md.Issuer = "https://evil.example" }),
			ErrIssuerMismatch, []string{"https://evil.example"}},
		{"S256 absent", edit(func(md *wire.AuthServerMetadata, base string) { md.CodeChallengeMethodsSupported = nil }),
			ErrPKCEUnsupported, []string{"does not list"}},
		{"plain only", edit(func(md *wire.AuthServerMetadata, base string) { md.CodeChallengeMethodsSupported = []string{"plain"} }),
			ErrPKCEUnsupported, []string{"plain"}},
		{"javascript: endpoint", edit(func(md *wire.AuthServerMetadata, base string) { md.AuthorizationEndpoint = "javascript:alert(1)" }),
			ErrUnsupportedScheme, []string{"authorization_endpoint"}},
		{"data: endpoint", edit(func(md *wire.AuthServerMetadata, base string) { md.RegistrationEndpoint = "data:text/html,hi" }),
			ErrUnsupportedScheme, []string{"registration_endpoint"}},
		{"http endpoint off loopback", edit(func(md *wire.AuthServerMetadata, base string) { md.TokenEndpoint = "http://as.example/token" }),
			ErrInsecureHTTP, []string{"token_endpoint", "http://as.example/token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := authServer(t, map[string]func(string) any{path: tt.doc})
			_, err := FetchAuthServerMetadata(context.Background(), nil, srv.URL)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v is not %v", err, tt.want)
			}
			for _, s := range append(tt.wantText, srv.URL) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
	t.Run("bounds", func(t *testing.T) {
		srv := httptest.NewServer(http.NewServeMux())
		t.Cleanup(srv.Close)
		mux := srv.Config.Handler.(*http.ServeMux)
		mux.HandleFunc("GET /slow/.well-known/openid-configuration", blocking(t))
		mux.HandleFunc("GET /big/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(strings.Repeat(" ", MaxBodySize+1)))
		})
		if _, err := FetchAuthServerMetadata(context.Background(), nil, srv.URL+"/slow", WithFetchTimeout(100*time.Millisecond)); !errors.Is(err, ErrTimeout) {
			t.Errorf("slow: %v, want ErrTimeout", err)
		}
		if _, err := FetchAuthServerMetadata(context.Background(), nil, srv.URL+"/big"); !errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("big: %v, want ErrResponseTooLarge", err)
		}
	})
	for issuer, want := range map[string]error{"http://as.example": ErrInsecureHTTP, "data:,x": ErrUnsupportedScheme} {
		if _, err := FetchAuthServerMetadata(context.Background(), nil, issuer); !errors.Is(err, want) {
			t.Errorf("FetchAuthServerMetadata(%q) = %v, want %v", issuer, err, want)
		}
	}
}

func TestDiscoverAuthServer(t *testing.T) {
	t.Run("legacy origin without metadata gets the default endpoints", func(t *testing.T) {
		srv, _ := authServer(t, nil)
		d := &ResourceDiscovery{Target: srv.URL + "/mcp", Legacy: true, AuthorizationServers: []string{srv.URL}}
		md, err := DiscoverAuthServer(context.Background(), nil, d)
		if err != nil {
			t.Fatal(err)
		}
		if md.Issuer != srv.URL || md.AuthorizationEndpoint != srv.URL+"/authorize" || md.TokenEndpoint != srv.URL+"/token" ||
			md.RegistrationEndpoint != srv.URL+"/register" {
			t.Fatalf("metadata = %+v", md)
		}
	})
	t.Run("legacy origin with root metadata uses it", func(t *testing.T) {
		srv, _ := authServer(t, map[string]func(string) any{"/.well-known/oauth-authorization-server": goodMetadata("")})
		d := &ResourceDiscovery{Legacy: true, AuthorizationServers: []string{srv.URL}}
		md, err := DiscoverAuthServer(context.Background(), nil, d)
		if err != nil || md.AuthorizationEndpoint != srv.URL+"/authorize" || md.RegistrationEndpoint != "" {
			t.Fatalf("metadata %+v, %v", md, err)
		}
	})
	t.Run("no fallback outside legacy", func(t *testing.T) {
		srv, _ := authServer(t, nil)
		d := &ResourceDiscovery{AuthorizationServers: []string{srv.URL}}
		if _, err := DiscoverAuthServer(context.Background(), nil, d); !errors.Is(err, ErrNoAuthServerMetadata) {
			t.Fatalf("error %v, want ErrNoAuthServerMetadata", err)
		}
		if _, err := DiscoverAuthServer(context.Background(), nil, &ResourceDiscovery{}); !errors.Is(err, ErrNoAuthorizationServers) {
			t.Fatalf("error %v, want ErrNoAuthorizationServers", err)
		}
	})
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		url  string
		want error
	}{
		{"https://as.example/token", nil},
		{"HTTPS://as.example", nil},
		{"http://127.0.0.1:8080/x", nil},
		{"http://127.10.20.30/x", nil},
		{"http://[::1]:9/x", nil},
		{"http://localhost/x", nil},
		{"http://LocalHost:1/x", nil},
		{"http://as.example/token", ErrInsecureHTTP},
		{"http://127.0.0.1.nip.io/x", ErrInsecureHTTP},
		{"http://localhost.example/x", ErrInsecureHTTP},
		{"http://[::ffff:10.0.0.1]/x", ErrInsecureHTTP},
		{"javascript:alert(1)", ErrUnsupportedScheme},
		{"JavaScript://%0aalert(1)", ErrUnsupportedScheme},
		{"data:text/html;base64,PHNjcmlwdD4=", ErrUnsupportedScheme},
		{"file:///etc/passwd", ErrUnsupportedScheme},
		{"ftp://as.example", ErrUnsupportedScheme},
		{"/relative/path", ErrInvalidURL},
		{"https://", ErrInvalidURL},
		{"", ErrInvalidURL},
		{"https://as.example/%zz", ErrInvalidURL},
	}
	for _, tt := range tests {
		err := CheckURL(tt.url)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("CheckURL(%q) = %v, want %v", tt.url, err, tt.want)
		}
	}
}

func TestSameIssuer(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:7777", "http://127.0.0.1:7777/", true},
		{"HTTP://Example.COM", "http://example.com/", true},
		{"https://example.com:443/", "https://example.com", true},
		{"http://example.com:80", "http://example.com/", true},
		{"https://example.com/tenant", "https://example.com/tenant/", false},
		{"https://example.com/Tenant", "https://example.com/tenant", false},
		{"https://example.com", "http://example.com", false},
		{"https://example.com:8443", "https://example.com", false},
		{"https://example.com/?a=1", "https://example.com/", false},
	} {
		if got := SameIssuer(tt.a, tt.b); got != tt.want {
			t.Errorf("SameIssuer(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
