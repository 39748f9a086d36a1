package store

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"
)

// decodeCredentialsInto decodes b into doc with decodeCredentials, and
// says whether it did (doc is untouched when not).
func decodeCredentialsInto(doc *credentialsDoc, b []byte) bool {
	d, ok := decodeCredentials(b)
	if ok {
		*doc = *d
	}
	return ok
}

// decodeCredentials decodes a credentials file (credentials.json) as
// agentauth writes it, without encoding/json, and reports whether it
// could. encoding/json's first decode of a struct type builds the type's
// field tables and encoders too: cold code that was about a twentieth of
// `agentauth status` (docs/performance.md), where this walk over the
// bytes costs a tenth of that.
//
// It accepts a strict subset of JSON that it decodes exactly as
// json.Unmarshal would into the same types: the members named in the
// types' JSON tags, spelled as written there and each at most once per
// object, with values of their field's type; strings of valid UTF-8
// without escapes (or control characters), integers without fraction or
// exponent, true and false, JSON's white space. Anything else, such as an
// unknown or differently cased member name (json.Unmarshal matches names
// without regard to case), a member given twice (json.Unmarshal merges
// objects), a null, an escape (a PEM key's newlines, an & written
// \u0026), trailing data or invalid JSON, returns false, and the caller
// decodes with json.Unmarshal as before, with its errors.
// TestDecodeCredentialsMatchesUnmarshal and FuzzDecodeCredentials hold the
// two to the same result.
func decodeCredentials(b []byte) (*credentialsDoc, bool) {
	d := &fastDecoder{b: b}
	doc := &credentialsDoc{}
	var seen [2]bool
	ok := d.object(func(name string) bool {
		switch name {
		case "version":
			return once(&seen[0]) && d.int(&doc.Version)
		case "credentials":
			return once(&seen[1]) && d.array(func() bool {
				c := &Credential{}
				doc.Credentials = append(doc.Credentials, c)
				return d.credential(c)
			}, func() { doc.Credentials = []*Credential{} })
		}
		return false
	})
	// json.Unmarshal refuses anything after the value but white space.
	d.space()
	if !ok || d.i != len(b) {
		return nil, false
	}
	return doc, true
}

// fastDecoder reads b from offset i.
type fastDecoder struct {
	b []byte
	i int
}

// once marks a member seen and says whether it was not seen before.
func once(seen *bool) bool {
	if *seen {
		return false
	}
	*seen = true
	return true
}

// space skips JSON's white space (RFC 8259 §2).
func (d *fastDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and the byte c, and says whether c was there.
func (d *fastDecoder) next(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads an object, calling member with each member's name to read
// its value.
func (d *fastDecoder) object(member func(name string) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		var name string
		if !d.string(&name) || !d.next(':') || !member(name) {
			return false
		}
		if !d.next(',') {
			return d.next('}')
		}
	}
}

// array reads an array, calling elem for each element; empty is called
// first, so that an empty array leaves an empty slice as json.Unmarshal
// does.
func (d *fastDecoder) array(elem func() bool, empty func()) bool {
	if !d.next('[') {
		return false
	}
	empty()
	if d.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !d.next(',') {
			return d.next(']')
		}
	}
}

// string reads a string without escapes or control characters, of valid
// UTF-8: its bytes are then the string's value (RFC 8259 §7).
func (d *fastDecoder) string(p *string) bool {
	if !d.next('"') {
		return false
	}
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			raw := d.b[start:d.i]
			d.i++
			*p = string(raw)
			return utf8.Valid(raw)
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

func (d *fastDecoder) bool(p *bool) bool {
	d.space()
	for _, v := range []bool{true, false} {
		if lit := strconv.FormatBool(v); bytes.HasPrefix(d.b[d.i:], []byte(lit)) {
			d.i += len(lit)
			*p = v
			return true
		}
	}
	return false
}

// int reads an integer (RFC 8259 §6: -?(0|[1-9][0-9]*), no fraction or
// exponent) as json.Unmarshal reads one into an int.
func (d *fastDecoder) int(p *int) bool {
	d.space()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || d.b[digits] == '0' && d.i > digits+1 {
		return false
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return false
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 0)
	*p = int(v)
	return err == nil
}

// strings reads an array of strings.
func (d *fastDecoder) strings(p *[]string) bool {
	return d.array(func() bool {
		*p = append(*p, "")
		return d.string(&(*p)[len(*p)-1])
	}, func() { *p = []string{} })
}

// time reads a time as json.Unmarshal does: the string's literal, quotes
// included, goes to time.Time's UnmarshalJSON (RFC 3339).
func (d *fastDecoder) time(p *time.Time) bool {
	var s string
	return d.string(&s) && p.UnmarshalJSON([]byte(`"`+s+`"`)) == nil
}

// credential reads one Credential object.
func (d *fastDecoder) credential(c *Credential) bool {
	var seen [25]bool
	return d.object(func(name string) bool {
		switch name {
		case "resource":
			return once(&seen[0]) && d.string(&c.Resource)
		case "issuer":
			return once(&seen[1]) && d.string(&c.Issuer)
		case "scheme_id":
			return once(&seen[2]) && d.string(&c.SchemeID)
		case "target":
			return once(&seen[3]) && d.string(&c.Target)
		case "no_resource":
			return once(&seen[4]) && d.bool(&c.NoResource)
		case "grant":
			return once(&seen[5]) && d.string(&c.Grant)
		case "assertion_source":
			return once(&seen[6]) && d.string(&c.AssertionSource)
		case "idp_token_endpoint":
			return once(&seen[7]) && d.string(&c.IdPTokenEndpoint)
		case "idp_client_id":
			return once(&seen[8]) && d.string(&c.IdPClientID)
		case "access_token":
			return once(&seen[9]) && d.string(&c.AccessToken)
		case "refresh_token":
			return once(&seen[10]) && d.string(&c.RefreshToken)
		case "refresh_expiry":
			return once(&seen[11]) && d.time(&c.RefreshExpiry)
		case "token_type":
			return once(&seen[12]) && d.string(&c.TokenType)
		case "expiry":
			return once(&seen[13]) && d.time(&c.Expiry)
		case "obtained":
			return once(&seen[14]) && d.time(&c.Obtained)
		case "scopes":
			return once(&seen[15]) && d.strings(&c.Scopes)
		case "subject":
			return once(&seen[16]) && d.string(&c.Subject)
		case "provider":
			return once(&seen[17]) && d.string(&c.Provider)
		case "client":
			return once(&seen[18]) && d.client(&c.Client)
		case "token_endpoint":
			return once(&seen[19]) && d.string(&c.TokenEndpoint)
		case "revocation_endpoint":
			return once(&seen[20]) && d.string(&c.RevocationEndpoint)
		case "allowed_targets":
			return once(&seen[21]) && d.strings(&c.AllowedTargets)
		case "rejected":
			return once(&seen[22]) && d.string(&c.Rejected)
		case "dpop_key":
			return once(&seen[23]) && d.string(&c.DPoPKey)
		case "updated_at":
			return once(&seen[24]) && d.time(&c.UpdatedAt)
		}
		return false
	})
}

// client reads a ClientRegistration object.
func (d *fastDecoder) client(r *ClientRegistration) bool {
	var seen [9]bool
	return d.object(func(name string) bool {
		switch name {
		case "client_id":
			return once(&seen[0]) && d.string(&r.ClientID)
		case "client_secret":
			return once(&seen[1]) && d.string(&r.ClientSecret)
		case "auth_method":
			return once(&seen[2]) && d.string(&r.AuthMethod)
		case "private_key":
			return once(&seen[3]) && d.string(&r.PrivateKey)
		case "source":
			return once(&seen[4]) && d.string(&r.Source)
		case "callback_port":
			return once(&seen[5]) && d.int(&r.CallbackPort)
		case "registration_client_uri":
			return once(&seen[6]) && d.string(&r.RegistrationClientURI)
		case "registration_access_token":
			return once(&seen[7]) && d.string(&r.RegistrationAccessToken)
		case "rejected":
			return once(&seen[8]) && d.bool(&r.Rejected)
		}
		return false
	})
}
