package flows

import (
	"encoding/json"
	"testing"
	"time"
)

// TestRefreshExpiresIn: refresh_expires_in (an extension) sets
// RefreshExpiry when it is a positive number and there is a refresh
// token, capped at MaxTokenLifetime; 0, a bad value or none leaves it zero
// and never fails the response.
func TestRefreshExpiresIn(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		body string
		want time.Duration // 0: none
	}{
		{`{"access_token":"a","refresh_token":"r","refresh_expires_in":1800}`, 30 * time.Minute},
		{`{"access_token":"a","refresh_token":"r","refresh_expires_in":"60"}`, time.Minute},
		{`{"access_token":"a","refresh_token":"r","refresh_expires_in":1e400}`, MaxTokenLifetime},
		{`{"access_token":"a","refresh_token":"r","refresh_expires_in":{"x":1}}`, 0},
		{`{"access_token":"a","refresh_token":"r","refresh_expires_in":1e12}`, MaxTokenLifetime},
		{`{"access_token":"a","refresh_token":"r","refresh_expires_in":0}`, 0},
		{`{"access_token":"a","refresh_token":"r","refresh_expires_in":"soon"}`, 0},
		{`{"access_token":"a","refresh_token":"r"}`, 0},
		{`{"access_token":"a","refresh_expires_in":1800}`, 0},
	} {
		var tr tokenResponse
		if err := json.Unmarshal([]byte(tc.body), &tr); err != nil {
			t.Fatal(err)
		}
		tok, err := tr.token(now, nil, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		var want time.Time
		if tc.want != 0 {
			want = now.Add(tc.want)
		}
		if !tok.RefreshExpiry.Equal(want) {
			t.Errorf("%s: refresh expiry %v, want %v", tc.body, tok.RefreshExpiry, want)
		}
	}
}
