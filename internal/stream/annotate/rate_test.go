package annotate

import (
	"testing"
	"time"
)

func TestRateMeter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := newRateMeter(10 * time.Second)
	for i := range 10 {
		r.Add(t0.Add(time.Duration(i)*time.Second), 50)
	}
	cases := []struct {
		at   time.Duration
		want float64
	}{
		{9 * time.Second, 50},  // 500 events in the last 10 s
		{14 * time.Second, 25}, // seconds 5..9 remain
		{30 * time.Second, 0},  // all expired
	}
	for _, c := range cases {
		if got := r.Rate(t0.Add(c.at)); got != c.want {
			t.Errorf("rate at +%v = %v, want %v", c.at, got, c.want)
		}
	}
}

func TestLagTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newLagTracker(30 * time.Second)
	if _, ok := l.Total(t0); ok {
		t.Fatal("lag reported before any message")
	}
	l.Observe(0, 10, t0)
	l.Observe(1, 5, t0)
	l.Observe(0, 3, t0.Add(time.Second)) // newer message of partition 0
	l.Observe(2, -1, t0)                 // a high-water mark behind the offset counts as caught up
	if n, ok := l.Total(t0.Add(time.Second)); !ok || n != 8 {
		t.Errorf("total %d, want 8", n)
	}
	l.Observe(1, 7, t0.Add(40*time.Second))
	if n, _ := l.Total(t0.Add(40 * time.Second)); n != 7 {
		t.Errorf("after partitions 0 and 2 went stale: %d, want 7", n)
	}
}
