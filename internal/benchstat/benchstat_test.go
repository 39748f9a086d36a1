package benchstat

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- { // 100 latencies, 1 ms to 100 ms, slowest first
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    int
		want time.Duration
	}{{0, time.Millisecond}, {50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}} {
		if got := Percentile(lat, tc.p); got != tc.want {
			t.Errorf("p%d = %v, want %v", tc.p, got, tc.want)
		}
	}
	if lat[0] != 100*time.Millisecond {
		t.Errorf("Percentile sorted its argument: first %v", lat[0])
	}
	if got := Percentile(nil, 99); got != 0 {
		t.Errorf("p99 of none = %v, want 0", got)
	}
	if got := Percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("p99 of one = %v, want it", got)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	xs := []float64{2, 1}
	Median(xs)
	if xs[0] != 2 {
		t.Errorf("Median sorted its argument: %v", xs)
	}
}

func TestMillis(t *testing.T) {
	if got := Millis(1500 * time.Microsecond); got != 1.5 {
		t.Errorf("Millis(1.5ms) = %v", got)
	}
}
