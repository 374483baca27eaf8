package apikey

import (
	"testing"
	"time"
)

func TestLimiterBurstThenSteady(t *testing.T) {
	l := newLimiter()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 100; i++ {
		d := l.allow(1, 100, t0)
		if !d.Allowed || d.Remaining != 99-i {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	d := l.allow(1, 100, t0)
	if d.Allowed || d.RetryAfter != 600*time.Millisecond || d.Reset != time.Minute {
		t.Fatalf("101st request: %+v", d)
	}
	// One request is earned back every 0.6 s.
	if d := l.allow(1, 100, t0.Add(600*time.Millisecond)); !d.Allowed || d.Remaining != 0 {
		t.Errorf("after 0.6 s: %+v", d)
	}
	if d := l.allow(1, 100, t0.Add(700*time.Millisecond)); d.Allowed {
		t.Errorf("after 0.7 s a second request was allowed: %+v", d)
	}
	// After a full minute of rest, the whole limit is back.
	if d := l.allow(1, 100, t0.Add(2*time.Minute)); !d.Allowed || d.Remaining != 99 {
		t.Errorf("after a rest: %+v", d)
	}
	// Keys are independent.
	if d := l.allow(2, 100, t0); !d.Allowed || d.Remaining != 99 {
		t.Errorf("another key: %+v", d)
	}
}

func TestLimiterOddLimit(t *testing.T) {
	l := newLimiter()
	t0 := time.Unix(0, 0)
	allowed := 0
	for i := 0; i < 20; i++ {
		if l.allow(1, 7, t0).Allowed {
			allowed++
		}
	}
	if allowed != 7 {
		t.Errorf("%d requests allowed at once with a limit of 7", allowed)
	}
	if d := l.allow(1, 0, t0); d.Limit != 1 {
		t.Errorf("a limit below 1 is treated as %d, want 1", d.Limit)
	}
}
