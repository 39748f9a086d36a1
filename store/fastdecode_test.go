package store

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDecodeCredentialsMatchesUnmarshal: the file the store writes, with
// every field of a credential set, is decoded without encoding/json, to
// what json.Unmarshal makes of it; a file with escapes (a PEM key, an &
// in a URL) is left to json.Unmarshal and still read; and for every other
// input the fast path either declines or agrees with json.Unmarshal
// (which then decodes it, with its own errors). A field added to
// Credential that the fast path does not know fails the first check.
func TestDecodeCredentialsMatchesUnmarshal(t *testing.T) {
	s := newFile(t.TempDir())
	full := &Credential{}
	fillFields(reflect.ValueOf(full).Elem(), "v")
	mustPut(t, s, full)
	mustPut(t, s, testCred("https://r.example/mcp", ""))
	plain := testCred("https://r.example/b", "plain")
	plain.Expiry = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("", 2*3600))
	plain.Scopes = []string{}
	plain.Subject = "ünïcode ✓"
	mustPut(t, s, plain)
	written, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeCredentials(written); !ok {
		t.Fatalf("the file as the store writes it is not decoded by the fast path:\n%s", written)
	}
	sameAsUnmarshal(t, written)

	escaped := testCred("https://r.example/a?x=1&y=<2>", "dpop")
	escaped.DPoPKey = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"
	mustPut(t, s, escaped)
	written, err = os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	sameAsUnmarshal(t, written)
	creds, err := s.List(t.Context())
	if err != nil || len(creds) != 4 {
		t.Fatalf("List = %d credentials, %v; want 4", len(creds), err)
	}
	for _, c := range creds {
		if c.SchemeID == "dpop" && c.DPoPKey != escaped.DPoPKey {
			t.Errorf("DPoPKey read back as %q", c.DPoPKey)
		}
	}

	for _, in := range decodeEdgeCases {
		sameAsUnmarshal(t, []byte(in))
	}
	// json.Unmarshal merges a member given twice and matches names
	// without regard to case: the fast path must decline these.
	for _, in := range []string{
		`{"version":1,"credentials":[{"resource":"r","client":{"client_id":"a","source":"dcr"},"client":{"client_id":"b"}}]}`,
		`{"version":1,"credentials":[{"Resource":"r"}]}`,
		`{"version":1,"credentials":[{"expiry":"\u0032030-01-02T03:04:05Z"}]}`,
		`{"version":1,"credentials":[{"resource":"r\u0026s"}]}`,
		`{"version":1,"credentials":[{"resource":"r\ns"}]}`,
	} {
		if _, ok := decodeCredentials([]byte(in)); ok {
			t.Errorf("fast path decoded %s; want it left to json.Unmarshal", in)
		}
	}
}

// decodeEdgeCases are inputs the fast path must decline or decode as
// json.Unmarshal does.
var decodeEdgeCases = []string{
	`{"version":1,"credentials":[]}`,
	`{"credentials":[],"version":1}`,
	`{"version":1}`,
	`{}`,
	`{"version":2,"credentials":[]}`,
	` {"version":1,"credentials":[{"resource":"r","scopes":[]}]} ` + "\n",
	`{"version":1,"credentials":[{"resource":"r"}]}x`,
	`{"version":1,"credentials":[{"resource":"r"}]}{}`,
	`{"version":1.0,"credentials":[]}`,
	`{"version":1e0,"credentials":[]}`,
	`{"version":"1","credentials":[]}`,
	`{"version":99999999999999999999,"credentials":[]}`,
	`{"version":-0,"credentials":[]}`,
	`{"version":1,"credentials":null}`,
	`{"version":1,"credentials":[null]}`,
	`{"version":1,"credentials":["r"]}`,
	`{"version":1,"credentials":{}}`,
	`{"version":1,"credentials":[{"resource":null}]}`,
	`{"version":1,"credentials":[{"resource":1}]}`,
	`{"version":1,"credentials":[{"unknown":"x"}]}`,
	`{"version":1,"credentials":[{"resource":"r","resource":"s"}]}`,
	`{"version":1,"credentials":[{"resource":"a\u00e9\ud83d\ude00\n"}]}`,
	"{\"version\":1,\"credentials\":[{\"resource\":\"aé😀\x7f\"}]}",
	"{\"version\":1,\"credentials\":[{\"resource\":\"tab\there\"}]}",
	`{"version":01,"credentials":[]}`,
	`{"version":-1,"credentials":[]}`,
	`{"version":1 ,"credentials" : [ ] }`,
	`{"version":1,"credentials":[{"no_resource":truex}]}`,
	`{"version":1,"credentials":[{"no_resource":tru}]}`,
	`{"version":1,"credentials":[{"client":{"callback_port":-}}]}`,
	`{"version":1,"credentials":[{"client":{"callback_port":12x}}]}`,
	"{\"version\":1,\"credentials\":[{\"resource\":\"r\"}]}\v",
	"\ufeff{\"version\":1,\"credentials\":[]}",
	"{\"version\":1,\"credentials\":[{\"resource\":\"bad \xff utf-8\"}]}",
	`{"version":1,"credentials":[{"expiry":"2030-01-02T03:04:05Z"}]}`,
	`{"version":1,"credentials":[{"expiry":"2030-01-02T03:04:05.5+02:00"}]}`,
	`{"version":1,"credentials":[{"expiry":"2030-01-02 03:04:05"}]}`,
	`{"version":1,"credentials":[{"expiry":"null"}]}`,
	`{"version":1,"credentials":[{"expiry":null}]}`,
	`{"version":1,"credentials":[{"no_resource":true,"scopes":["a","b"],"allowed_targets":["x"]}]}`,
	`{"version":1,"credentials":[{"no_resource":"true"}]}`,
	`{"version":1,"credentials":[{"scopes":["a",1]}]}`,
	`{"version":1,"credentials":[{"client":{"callback_port":8080,"rejected":true}}]}`,
	`{"version":1,"credentials":[{"client":{"callback_port":8080.5}}]}`,
	`{"version":1,"credentials":[{"client":{"callback_port":1e3}}]}`,
	`{"version":1,"credentials":[{"client":{"other":1}}]}`,
	`{"version":1,"credentials":[{"client":null}]}`,
	`{"version":1,"credentials":[{"resource":"r"}`,
	`{"version":1,"credentials":[{"resource":"r",}]}`,
	``,
	`null`,
	`[]`,
}

// FuzzDecodeCredentials holds the fast path to json.Unmarshal's result
// on any input (go test runs the seeds; go test -fuzz explores).
func FuzzDecodeCredentials(f *testing.F) {
	for _, in := range decodeEdgeCases {
		f.Add([]byte(in))
	}
	f.Fuzz(sameAsUnmarshal)
}

// sameAsUnmarshal fails when the fast path decodes in and json.Unmarshal
// refuses it or makes something else of it.
func sameAsUnmarshal(t *testing.T, in []byte) {
	t.Helper()
	fast, ok := decodeCredentials(in)
	if !ok {
		return
	}
	var want credentialsDoc
	if err := json.Unmarshal(in, &want); err != nil {
		t.Errorf("fast path decoded %q; json.Unmarshal refuses it: %v", in, err)
		return
	}
	if !reflect.DeepEqual(fast, &want) {
		t.Errorf("fast path decoded %q as\n%#v\njson.Unmarshal as\n%#v", in, fast, &want)
	}
}

// fillFields sets every field of the struct v to a value that is not its
// zero value, so that the store writes every member.
func fillFields(v reflect.Value, prefix string) {
	for i := range v.NumField() {
		f, name := v.Field(i), prefix+"-"+strings.ToLower(v.Type().Field(i).Name)
		switch f.Kind() {
		case reflect.String:
			f.SetString(name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int:
			f.SetInt(int64(7 + i))
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{name + "-1", name + "-2"}))
		case reflect.Struct:
			if f.Type() == reflect.TypeFor[time.Time]() {
				f.Set(reflect.ValueOf(time.Date(2030, 1, 2, 3, 4, 5, i, time.UTC)))
			} else {
				fillFields(f, name)
			}
		default:
			panic("fillFields: a field of kind " + f.Kind().String())
		}
	}
}
