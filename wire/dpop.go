package wire

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// DPoP (RFC 9449): proof-of-possession of a key for access tokens.
const (
	// HeaderDPoP carries a proof (§4.1); HeaderDPoPNonce a server's nonce (§8, §9).
	HeaderDPoP      = "DPoP"
	HeaderDPoPNonce = "DPoP-Nonce"
	// TokenTypeDPoP is the token_type of a DPoP-bound token (§5) and the
	// Authorization scheme that presents it (§7.1).
	TokenTypeDPoP = "DPoP"
	// dpopProofType is the typ of a proof's JOSE header (§4.2).
	dpopProofType = "dpop+jwt"
	// ErrUseDPoPNonce is the error code asking for a nonce (§8, §9).
	ErrUseDPoPNonce = "use_dpop_nonce"
	// ErrInvalidDPoPProof is the error code of a refused proof (§7.1).
	ErrInvalidDPoPProof = "invalid_dpop_proof"
	// MaxDPoPProofBytes bounds a DPoP header.
	MaxDPoPProofBytes = 4096
)

// DPoPAlgs are the proof algorithms agentauth signs and accepts.
var DPoPAlgs = []jose.SignatureAlgorithm{jose.ES256}

// DPoPKey is a client's proof-of-possession key: P-256, ES256.
type DPoPKey struct {
	key *ecdsa.PrivateKey
	jwk jose.JSONWebKey
}

// NewDPoPKey generates a key.
func NewDPoPKey() (*DPoPKey, string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", fmt.Errorf("cannot generate a DPoP key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, "", fmt.Errorf("cannot encode the DPoP key: %w", err)
	}
	return newDPoPKey(k), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

// ParseDPoPKey reads a key written by NewDPoPKey.
func ParseDPoPKey(pemKey string) (*DPoPKey, error) {
	block, _ := pem.Decode([]byte(pemKey))
	if block == nil {
		return nil, errors.New("cannot read the DPoP key: no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("cannot read the DPoP key: %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("cannot read the DPoP key: not a P-256 key")
	}
	return newDPoPKey(ek), nil
}

func newDPoPKey(k *ecdsa.PrivateKey) *DPoPKey {
	return &DPoPKey{key: k, jwk: jose.JSONWebKey{Key: &k.PublicKey, Algorithm: string(jose.ES256)}}
}

// Thumbprint is the key's JWK SHA-256 thumbprint (RFC 7638), the jkt.
func (k *DPoPKey) Thumbprint() string { return JWKThumbprint(&k.jwk) }

// JWKThumbprint is the base64url RFC 7638 SHA-256 thumbprint of jwk.
func JWKThumbprint(jwk *jose.JSONWebKey) string {
	t, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(t)
}

// dpopClaims are a proof's claims (§4.2).
type dpopClaims struct {
	ID       string `json:"jti"`
	Method   string `json:"htm"`
	URI      string `json:"htu"`
	IssuedAt int64  `json:"iat"`
	ATH      string `json:"ath,omitempty"`
	Nonce    string `json:"nonce,omitempty"`
}

// Proof signs a DPoP proof (§4.2) for a request: htm method, htu the
// target URI without query and fragment, a fresh jti, iat now, ath the hash
// of accessToken when one is presented, and the server's nonce if any.
func (k *DPoPKey) Proof(method, target, accessToken, nonce string, now time.Time) (string, error) {
	htu, err := DPoPTargetURI(target)
	if err != nil {
		return "", err
	}
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType(dpopProofType)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.key}, opts)
	if err != nil {
		return "", fmt.Errorf("cannot sign the DPoP proof: %w", err)
	}
	c := dpopClaims{ID: rand.Text(), Method: method, URI: htu, IssuedAt: now.Unix(), Nonce: nonce}
	if accessToken != "" {
		c.ATH = TokenHash(accessToken)
	}
	s, err := jwt.Signed(signer).Claims(c).Serialize()
	if err != nil {
		return "", fmt.Errorf("cannot sign the DPoP proof: %w", err)
	}
	return s, nil
}

// TokenHash is the ath of an access token (§4.2): base64url SHA-256.
func TokenHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// DPoPTargetURI is the htu of a request URI (§4.2): without query and
// fragment.
func DPoPTargetURI(target string) (string, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("cannot make a DPoP proof for %q: not an absolute URL", target)
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	return u.String(), nil
}

// DPoPCheck is what a server expects of a proof (§4.3).
type DPoPCheck struct {
	Method string
	// URI is the request's URI as the server knows itself.
	URI string
	// AccessToken, when set, must match the proof's ath.
	AccessToken string
	Now         time.Time
	// Window bounds |now - iat|.
	Window time.Duration
}

// DPoPProof is a checked proof.
type DPoPProof struct {
	// JKT is the thumbprint of the proof's key; JTI its id, for a replay
	// cache; Expires when the replay cache may forget it; Nonce the
	// server nonce it carries, for the server to check (§8, §9).
	JKT, JTI, Nonce string
	Expires         time.Time
}

// CheckDPoPProof verifies a proof (§4.3): one well-formed JWT of typ
// dpop+jwt, signed with ES256 by the public key in its jwk header, whose
// htm and htu match the request, iat within the window, ath matching the
// access token. The caller checks the jti against its replay cache, the
// jkt against the token's cnf and the nonce against its own.
func CheckDPoPProof(proof string, want DPoPCheck) (*DPoPProof, error) {
	if proof == "" {
		return nil, errors.New("no DPoP proof")
	}
	if len(proof) > MaxDPoPProofBytes {
		return nil, fmt.Errorf("the DPoP proof is longer than %d bytes", MaxDPoPProofBytes)
	}
	tok, err := jwt.ParseSigned(proof, DPoPAlgs)
	if err != nil || len(tok.Headers) != 1 {
		return nil, errors.New("the DPoP proof is not a JWT signed with ES256")
	}
	h := tok.Headers[0]
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != dpopProofType {
		return nil, errors.New("the DPoP proof's typ is not dpop+jwt")
	}
	if h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() || !h.JSONWebKey.Valid() {
		return nil, errors.New("the DPoP proof has no public jwk")
	}
	var c dpopClaims
	if err := tok.Claims(h.JSONWebKey.Key, &c); err != nil {
		return nil, errors.New("the DPoP proof's signature does not verify")
	}
	htu, _ := DPoPTargetURI(c.URI)
	wantURI, err := DPoPTargetURI(want.URI)
	iat := time.Unix(c.IssuedAt, 0)
	switch {
	case c.ID == "" || len(c.ID) > 256:
		return nil, errors.New("the DPoP proof has no valid jti")
	case c.Method != want.Method:
		return nil, fmt.Errorf("the DPoP proof's htm is not %s", want.Method)
	case err != nil || c.URI == "" || htu != wantURI || strings.ContainsAny(c.URI, "?#"):
		return nil, fmt.Errorf("the DPoP proof's htu is not %s", wantURI)
	case iat.Before(want.Now.Add(-want.Window)) || iat.After(want.Now.Add(want.Window)):
		return nil, fmt.Errorf("the DPoP proof's iat is not within %s of the server's time", want.Window)
	case want.AccessToken != "" && c.ATH != TokenHash(want.AccessToken):
		return nil, errors.New("the DPoP proof's ath does not match the access token")
	}
	return &DPoPProof{JKT: JWKThumbprint(h.JSONWebKey), JTI: c.ID, Nonce: c.Nonce, Expires: iat.Add(want.Window)}, nil
}
