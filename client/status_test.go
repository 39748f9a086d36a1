package client

import (
	"testing"
	"time"

	"github.com/agentauth/agentauth/store"
)

func TestRoughDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Minute: "0s", 0: "0s", 59 * time.Second: "59s", 12*time.Minute + 30*time.Second: "12m", 3*time.Hour + time.Second: "3h",
		47 * time.Hour: "47h", 50 * time.Hour: "2d",
	} {
		if got := RoughDuration(d); got != want {
			t.Errorf("RoughDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestDescribeCredential(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name       string
		left       time.Duration // 0: no expiry known
		access     string
		refresh    string
		wantState  string
		wantExpiry string
	}{
		{"valid", time.Hour, "at", "rt", StateValid, "expires in 1h"},
		{"expiring within a minute, refreshable", 30 * time.Second, "at", "rt", StateRefreshable, "expires in 30s"},
		{"expiring within a minute, not refreshable: still usable", 30 * time.Second, "at", "", StateValid, "expires in 30s"},
		{"expired, refreshable", -3 * time.Hour, "at", "rt", StateRefreshable, "expired 3h ago, refreshable"},
		{"expired, not refreshable", -3 * time.Hour, "at", "", StateExpired, "expired 3h ago, not refreshable"},
		{"no expiry known", 0, "at", "", StateValid, "no expiry known"},
		{"no access token, refreshable", 0, "", "rt", StateRefreshable, "no expiry known"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &store.Credential{AccessToken: tt.access, RefreshToken: tt.refresh}
			if tt.left != 0 {
				c.Expiry = now.Add(tt.left)
			}
			got := DescribeCredential(c, now, false)
			if got.State != tt.wantState || got.Expiry != tt.wantExpiry {
				t.Errorf("state %q, expiry %q; want %q, %q", got.State, got.Expiry, tt.wantState, tt.wantExpiry)
			}
		})
	}
}
