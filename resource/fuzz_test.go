package resource

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/tokenfake"
	jose "github.com/go-jose/go-jose/v4"
)

// fuzzIssuer is the trusted issuer of the fuzz targets.
const fuzzIssuer = "https://as.example"

// FuzzJWTValidate checks JWT validation two ways. A raw string must never
// panic, never need the network, and be accepted only in the canonical
// form of an at+jwt token with an allowed algorithm. A token signed here
// from fuzzed header and claims (typ, algorithm, iss, aud, exp, nbf, iat,
// and a respelling of one segment) must be accepted, refused as expired or
// refused as invalid exactly as a small model of the rules says:
// RFC 9068 §4 typ, the RFC 8725 §3.1 algorithm allow-list, iss, aud, exp
// (no leeway), nbf and iat (jwtLeeway), and canonical base64url.
//
//	go test -run '^$' -fuzz '^FuzzJWTValidate$' -fuzztime 30s ./host
func FuzzJWTValidate(f *testing.F) {
	type fuzzKey struct {
		alg     jose.SignatureAlgorithm
		key     any
		allowed bool
	}
	mustEC := func(c elliptic.Curve) *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			f.Fatal(err)
		}
		return k
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		f.Fatal(err)
	}
	ed := tokenfake.NewKey(f, "", jose.EdDSA).Signer
	keys := []fuzzKey{
		{jose.ES256, mustEC(elliptic.P256()), true},
		{jose.EdDSA, ed, true},
		{jose.RS256, rsaKey, true},
		{jose.ES384, mustEC(elliptic.P384()), false},
		{jose.HS256, []byte("a shared secret of thirty-two bytes!"), false},
	}
	var published []jose.JSONWebKey
	for i, k := range keys {
		if s, ok := k.key.(crypto.Signer); ok {
			published = append(published, jose.JSONWebKey{Key: s.Public(), KeyID: string(rune('a' + i)), Algorithm: string(k.alg), Use: "sig"})
		}
	}
	clock := tokenfake.NewClock()
	v := newJWTValidator(Scheme{AuthorizationServers: []string{fuzzIssuer}, Validation: Validation{Type: ValidationJWT, JWKSURI: fuzzIssuer + "/jwks"}},
		testResource, nil, clock.Now)
	// The keys are known and just fetched: validation never needs the
	// network (a nil client would panic if it tried).
	v.sets[""] = &keySet{uri: fuzzIssuer + "/jwks", keys: published, attempted: clock.Now()}
	now := clock.Now()

	sign := func(t testing.TB, k fuzzKey, kid, typ string, claims map[string]any) string {
		return tokenfake.SignWith(t, k.alg, k.key, kid, claims, typ)
	}
	good := sign(f, keys[0], "a", "at+jwt", tokenfake.Claims(fuzzIssuer, testResource, now))

	// raw, typ, key, issOK, iss, audOK, aud, exp, nbf, iat (offsets in
	// seconds from now), present (bits: exp, nbf, iat), respell.
	f.Add(good, "at+jwt", uint8(0), true, "", true, "", int64(3600), int64(0), int64(0), uint8(7), uint8(0))
	f.Add("a.b.c", "JWT", uint8(0), true, "", true, "", int64(3600), int64(0), int64(0), uint8(7), uint8(0))
	f.Add(good+"==", "", uint8(1), true, "", true, "", int64(3600), int64(0), int64(0), uint8(1), uint8(0))
	f.Add("eyJhbGciOiJub25lIn0.e30.", "application/AT+JWT", uint8(2), true, "", true, "", int64(60), int64(29), int64(31), uint8(7), uint8(5))
	f.Add("", "at+jwt", uint8(3), true, "", true, "", int64(60), int64(0), int64(0), uint8(7), uint8(0))
	f.Add("", "at+jwt", uint8(4), false, "https://evil.example", true, "", int64(60), int64(0), int64(0), uint8(7), uint8(0))
	f.Add("", "at+jwt", uint8(0), true, "", false, "http://127.0.0.1:7777/other", int64(0), int64(0), int64(0), uint8(7), uint8(2))
	f.Add("", "at+jwt", uint8(0), true, "", true, "", int64(-1), int64(0), int64(0), uint8(7), uint8(6))
	f.Add("", "at+jwt", uint8(1), true, "", true, "", int64(60), int64(0), int64(0), uint8(0), uint8(9))
	f.Add("", "at+jwt", uint8(0), true, "", true, "", int64(60), int64(0), int64(0), uint8(7), uint8(3))

	f.Fuzz(func(t *testing.T, raw, typ string, keyIndex uint8, issOK bool, iss string, audOK bool, aud string,
		exp, nbf, iat int64, present, respell uint8) {
		// A raw string.
		g, err := v.Validate(context.Background(), raw)
		var te *TokenError
		switch {
		case err == nil:
			parts := strings.Split(raw, ".")
			var h jwsHeader
			if len(parts) != 3 || !canonicalSegments(parts) || json.Unmarshal(mustDecode(parts[0]), &h) != nil ||
				!modelTyp(h.Typ) || !slices.Contains(AllowedAlgorithms, h.Alg) || g.Issuer != fuzzIssuer {
				t.Fatalf("accepted %q", raw)
			}
		case !errors.As(err, &te):
			t.Fatalf("%q: err = %v, want a *TokenError", raw, err)
		}

		// A signed token.
		k := keys[int(keyIndex)%len(keys)]
		c := map[string]any{"sub": "alice", "client_id": "cli", "scope": "agent:use", "jti": "j", "iss": fuzzIssuer, "aud": testResource}
		if !issOK {
			c["iss"] = iss
		}
		if !audOK {
			c["aud"] = aud
		}
		at := func(off int64) time.Time { return time.Unix(now.Unix()+off%(1<<32), 0) }
		if present&1 != 0 {
			c["exp"] = at(exp).Unix()
		}
		if present&2 != 0 {
			c["nbf"] = at(nbf).Unix()
		}
		if present&4 != 0 {
			c["iat"] = at(iat).Unix()
		}
		tok := sign(t, k, string(rune('a'+int(keyIndex)%len(keys))), typ, c)
		tok, canonical := respellSegment(tok, respell)

		invalid := !canonical || !k.allowed || !modelTyp(typ) ||
			c["iss"] != fuzzIssuer || c["aud"] != testResource || present&1 == 0 ||
			present&2 != 0 && at(nbf).After(now.Add(jwtLeeway)) || present&4 != 0 && at(iat).After(now.Add(jwtLeeway))
		expired := present&1 != 0 && !at(exp).After(now)
		g, err = v.Validate(context.Background(), tok)
		te = nil
		errors.As(err, &te)
		switch {
		case invalid:
			if te == nil || te.Kind != TokenInvalid {
				t.Fatalf("claims %v typ %q alg %s respell %d: got %v, want invalid", c, typ, k.alg, respell, err)
			}
		case expired:
			if te == nil || te.Kind != TokenExpired {
				t.Fatalf("claims %v: got %v, want expired", c, err)
			}
		default:
			if err != nil || g.Subject != "alice" || !g.Expiry.Equal(at(exp)) {
				t.Fatalf("claims %v typ %q alg %s respell %d: got %+v, %v; want accepted", c, typ, k.alg, respell, g, err)
			}
		}
	})
}

// modelTyp is RFC 9068 §4 read independently of isAccessTokenType:
// at+jwt, with or without application/, in any case.
func modelTyp(typ string) bool {
	return strings.EqualFold(typ, "at+jwt") || strings.EqualFold(typ, "application/at+jwt")
}

const b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// canonicalSegments is the model of canonical base64url: the alphabet
// only, no length that leaves a lone character, and zero unused bits.
func canonicalSegments(parts []string) bool {
	for _, p := range parts {
		if len(p)%4 == 1 {
			return false
		}
		for i := 0; i < len(p); i++ {
			if strings.IndexByte(b64url, p[i]) < 0 {
				return false
			}
		}
		if n := len(p); n > 0 {
			last := strings.IndexByte(b64url, p[n-1])
			if n%4 == 2 && last&0xf != 0 || n%4 == 3 && last&0x3 != 0 {
				return false
			}
		}
	}
	return true
}

func mustDecode(seg string) []byte {
	b, _ := decodeSegment(seg)
	return b
}

// respellSegment writes one segment of tok differently for the same
// bytes, by how%4: 0 not at all, 1 with "=" padding, 2 with non-zero
// unused bits, 3 with a line break; the segment is how/4%3. It reports
// whether tok is still canonical (some segments have no unused bits).
func respellSegment(tok string, how uint8) (string, bool) {
	parts := strings.Split(tok, ".")
	i := int(how/4) % 3
	p := parts[i]
	switch how % 4 {
	case 1:
		parts[i] = p + strings.Repeat("=", 1+int(how/16)%2)
	case 2:
		if len(p)%4 == 0 {
			return tok, true
		}
		last := strings.IndexByte(b64url, p[len(p)-1])
		parts[i] = p[:len(p)-1] + string(b64url[last|1])
	case 3:
		parts[i] = p[:len(p)/2] + "\n" + p[len(p)/2:]
	default:
		return tok, true
	}
	return strings.Join(parts, "."), false
}

// FuzzJWKSDecode checks that any document decodes without panicking into
// at most maxKeys valid public asymmetric keys, and that what it keeps
// survives a second round unchanged in number.
//
//	go test -run '^$' -fuzz '^FuzzJWKSDecode$' -fuzztime 30s ./host
func FuzzJWKSDecode(f *testing.F) {
	ec := tokenfake.NewKey(f, "ec", jose.ES256)
	ed := tokenfake.NewKey(f, "ed", jose.EdDSA)
	rs, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		f.Fatal(err)
	}
	set := func(keys ...jose.JSONWebKey) []byte {
		b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(set(ec.JWK(), ed.JWK(), jose.JSONWebKey{Key: rs.Public(), KeyID: "rs", Algorithm: "RS256", Use: "sig"}))
	f.Add(set(jose.JSONWebKey{Key: ec.Signer, KeyID: "private"}))            // a private key: only its public half is kept
	f.Add(set(jose.JSONWebKey{Key: []byte("secret"), KeyID: "oct"}))         // a symmetric key: skipped
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`)) // not on the curve
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}, 7, null, "x"]}`))
	f.Add([]byte(`{"keys":{}}`))
	f.Add([]byte(`[]`))
	var many []jose.JSONWebKey
	for range maxKeys + 2 {
		many = append(many, ed.JWK())
	}
	f.Add(set(many...))

	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := decodeJWKS(data)
		if err != nil {
			return
		}
		if len(keys) > maxKeys {
			t.Fatalf("%d keys kept, the bound is %d", len(keys), maxKeys)
		}
		for _, k := range keys {
			if !k.Valid() || !k.IsPublic() {
				t.Fatalf("kept key %+v is not a valid public key", k)
			}
			if _, symmetric := k.Key.([]byte); symmetric {
				t.Fatalf("kept a symmetric key")
			}
		}
		again, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
		if err != nil {
			t.Fatalf("cannot encode the kept keys: %v", err)
		}
		if round, err := decodeJWKS(again); err != nil || len(round) != len(keys) {
			t.Fatalf("second round kept %d of %d keys (%v)", len(round), len(keys), err)
		}
	})
}
