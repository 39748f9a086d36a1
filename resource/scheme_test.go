package resource

import (
	"testing"
	"time"
)

// A Duration in a config is a positive Go duration string.
func TestDurationJSON(t *testing.T) {
	for in, want := range map[string]time.Duration{`"90s"`: 90 * time.Second, `"1h"`: time.Hour} {
		var d Duration
		if err := d.UnmarshalJSON([]byte(in)); err != nil || time.Duration(d) != want {
			t.Errorf("%s: %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{`30`, `"soon"`, `"-5s"`, `"0s"`} {
		var d Duration
		if err := d.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s: accepted as %v", in, time.Duration(d))
		}
	}
}

// A scheme's grants are cached until they expire, and an introspected one
// for at most cacheTTL (default DefaultCacheTTL).
func TestSchemeCacheTTL(t *testing.T) {
	for _, c := range []struct {
		v    Validation
		want time.Duration
	}{
		{Validation{Type: ValidationStatic}, 0},
		{Validation{Type: ValidationJWT}, 0},
		{Validation{Type: ValidationIntrospection}, DefaultCacheTTL},
		{Validation{Type: ValidationIntrospection, CacheTTL: Duration(5 * time.Second)}, 5 * time.Second},
	} {
		if got := (Scheme{Validation: c.v}).CacheTTL(); got != c.want {
			t.Errorf("%+v: CacheTTL %v, want %v", c.v, got, c.want)
		}
	}
}
