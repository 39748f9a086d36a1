package wire_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentauth/agentauth/wire"
)

func TestParseWWWAuthenticate(t *testing.T) {
	type ch = wire.AuthChallenge
	type p = map[string]string
	tests := []struct {
		name    string
		headers []string
		want    []ch
	}{
		{"quoted", []string{`Bearer resource_metadata="http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp", scope="agent:use"`},
			[]ch{{"Bearer", p{"resource_metadata": "http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp", "scope": "agent:use"}}}},
		{"unquoted token values", []string{`Bearer realm=example, error=invalid_token`},
			[]ch{{"Bearer", p{"realm": "example", "error": "invalid_token"}}}},
		{"unquoted URL (lenient)", []string{`Bearer resource_metadata=https://h.example/.well-known/oauth-protected-resource, scope=a`},
			[]ch{{"Bearer", p{"resource_metadata": "https://h.example/.well-known/oauth-protected-resource", "scope": "a"}}}},
		{"escaped quotes and backslashes", []string{`Bearer error_description="the \"agent\" token is bad \\ sorry", error="invalid_token"`},
			[]ch{{"Bearer", p{"error_description": `the "agent" token is bad \ sorry`, "error": "invalid_token"}}}},
		{"comma and spaces inside quotes", []string{`Bearer scope="a b, c", error="insufficient_scope"`},
			[]ch{{"Bearer", p{"scope": "a b, c", "error": "insufficient_scope"}}}},
		{"several challenges in one header", []string{`Basic realm="simple", Bearer realm="api", scope="x y", DPoP algs="ES256 PS256"`},
			[]ch{{"Basic", p{"realm": "simple"}}, {"Bearer", p{"realm": "api", "scope": "x y"}}, {"DPoP", p{"algs": "ES256 PS256"}}}},
		{"several headers", []string{`Basic realm="a"`, `Bearer error="invalid_token"`},
			[]ch{{"Basic", p{"realm": "a"}}, {"Bearer", p{"error": "invalid_token"}}}},
		{"odd spacing and empty list elements", []string{"  Bearer   realm = \"r\" ,,  scope=\t\"s\" ,  "},
			[]ch{{"Bearer", p{"realm": "r", "scope": "s"}}}},
		{"no spaces", []string{`Bearer realm="r",error="invalid_token",error_description="expired"`},
			[]ch{{"Bearer", p{"realm": "r", "error": "invalid_token", "error_description": "expired"}}}},
		{"param names are case-insensitive", []string{`bearer Realm="r", SCOPE="s"`},
			[]ch{{"bearer", p{"realm": "r", "scope": "s"}}}},
		{"bare scheme", []string{`Bearer`}, []ch{{"Bearer", p{}}}},
		{"token68", []string{`Negotiate YIIB+w==, Bearer realm="r"`},
			[]ch{{"Negotiate", p{"": "YIIB+w=="}}, {"Bearer", p{"realm": "r"}}}},
		{"RFC 9110 example", []string{`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`},
			[]ch{{"Newauth", p{"realm": "apps", "type": "1", "title": `Login to "apps"`}}, {"Basic", p{"realm": "simple"}}}},
		{"unterminated quote keeps the rest", []string{`Bearer scope="a b`},
			[]ch{{"Bearer", p{"scope": "a b"}}}},
		{"empty", []string{""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wire.ParseWWWAuthenticate(tt.headers)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("ParseWWWAuthenticate(%q) mismatch (-want +got):\n%s", tt.headers, diff)
			}
		})
	}
}

func TestBearerChallenge(t *testing.T) {
	c, ok := wire.BearerChallenge([]string{`Basic realm="a"`, `DPoP algs="ES256", BEARER Scope="agent:use", error="insufficient_scope"`})
	if !ok {
		t.Fatal("no Bearer challenge found")
	}
	if c.Param("scope") != "agent:use" || c.Param("Error") != "insufficient_scope" {
		t.Fatalf("Bearer challenge params = %v", c.Params)
	}
	if _, ok := wire.BearerChallenge([]string{`Basic realm="a"`}); ok {
		t.Fatal("found a Bearer challenge in a Basic-only header")
	}
	if _, ok := wire.BearerChallenge(nil); ok {
		t.Fatal("found a Bearer challenge with no header")
	}
}

func TestFormatBearerChallengeRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"MCP 401", map[string]string{"resource_metadata": "http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp", "scope": "agent:use"},
			`Bearer resource_metadata="http://127.0.0.1:7777/.well-known/oauth-protected-resource/mcp", scope="agent:use"`},
		{"fixed order, then the rest sorted", map[string]string{"scope": "s", "zeta": "z", "error": "invalid_token", "alpha": "a", "realm": "r"},
			`Bearer realm="r", error="invalid_token", scope="s", alpha="a", zeta="z"`},
		{"escaping", map[string]string{"error": "invalid_token", "realm": `bad "quoted" \ value, really`},
			`Bearer realm="bad \"quoted\" \\ value, really", error="invalid_token"`},
		{"error_description limited to RFC 6750 §3 characters", map[string]string{"error_description": `the "token" \ expired — see RFC 6750 §3…`},
			`Bearer error_description="the 'token' / expired ? see RFC 6750 section 3..."`},
		{"empty values left out", map[string]string{"error": "", "scope": "s"}, `Bearer scope="s"`},
		{"nothing", nil, `Bearer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wire.FormatBearerChallenge(tt.params)
			if got != tt.want {
				t.Fatalf("FormatBearerChallenge = %s\nwant                    %s", got, tt.want)
			}
			// Through a real HTTP response and back.
			rec := httptest.NewRecorder()
			rec.Header().Set("WWW-Authenticate", got)
			rec.WriteHeader(http.StatusUnauthorized)
			c, ok := wire.BearerChallenge(rec.Result().Header.Values("WWW-Authenticate"))
			if !ok {
				t.Fatalf("no Bearer challenge in %q", got)
			}
			want := map[string]string{}
			for k, v := range tt.params {
				if v != "" {
					want[k] = v
				}
			}
			if diff := cmp.Diff(want, c.Params); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}
