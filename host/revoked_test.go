package host

import (
	"fmt"
	"testing"
	"time"
)

// TestRevocations: a revoked id is refused until its expiry and swept
// after; a held grant is found by its jti and by its family, and no longer
// once unheld; a grant held after its revocation is reported revoked.
func TestRevocations(t *testing.T) {
	r := newRevocations()
	t0 := time.Now()
	tab := &grantTable{}
	byJTI := &held{grant: &Grant{JTI: "j1", Family: "f1"}}
	byFamily := &held{grant: &Grant{JTI: "j2", Family: "f1"}}
	other := &held{grant: &Grant{JTI: "j3", Family: "f2"}}
	for _, e := range []*held{byJTI, byFamily, other} {
		if r.hold(tab, e) {
			t.Fatalf("%v held as revoked before any revocation", e.grant)
		}
	}
	hit := r.add(t0, t0.Add(time.Minute), map[string]bool{"f1": true})
	if len(hit) != 2 || hit[byJTI] == nil || hit[byFamily] == nil {
		t.Errorf("revoking family f1 hit %d grants, want its 2", len(hit))
	}
	if !r.revoked(byJTI.grant) || r.revoked(other.grant) {
		t.Error("revoked() does not follow the family")
	}
	r.unhold(other)
	if hit := r.add(t0, t0.Add(time.Minute), map[string]bool{"j3": true}); len(hit) != 0 {
		t.Errorf("an unheld grant was hit: %d", len(hit))
	}
	if !r.hold(tab, &held{grant: &Grant{JTI: "j9", Family: "f1"}}) {
		t.Error("a grant of a revoked family held afterwards is not reported revoked")
	}
	// A later revocation sweeps the expired ids.
	r.add(t0.Add(2*time.Minute), t0.Add(3*time.Minute), map[string]bool{"x": true})
	if r.has("f1") || r.has("j3") || !r.has("x") {
		t.Errorf("after expiry: f1 %v, j3 %v, x %v; want only x", r.has("f1"), r.has("j3"), r.has("x"))
	}
}

// BenchmarkRevocations: the cost of one revocation and of one check with
// n revocations already in force does not grow with n (it was a copy of
// the whole set per revocation). Run with:
//
//	go test -run '^$' -bench Revocations ./host/
func BenchmarkRevocations(b *testing.B) {
	for _, n := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("prior=%d", n), func(b *testing.B) {
			r := newRevocations()
			now := time.Now()
			for k := range n {
				r.add(now, now.Add(time.Hour), map[string]bool{fmt.Sprintf("prior-%d", k): true})
			}
			g := &Grant{JTI: "live", Family: "family"}
			k := 0
			for b.Loop() {
				r.add(now, now.Add(time.Hour), map[string]bool{fmt.Sprintf("new-%d", k): true})
				if r.revoked(g) {
					b.Fatal("a live grant is revoked")
				}
				k++
			}
		})
	}
}
