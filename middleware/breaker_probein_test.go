package middleware_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

func TestBreakerProbeIn(t *testing.T) {
	const cooldown = 10 * time.Second
	synctest.Test(t, func(t *testing.T) {
		h := newBk(bkSettings(nil), middleware.BreakerOptions{})
		if got := h.b.ProbeIn(); len(got) != 0 {
			t.Fatalf("closed: got %v, want no entry", got)
		}
		h.calls(t, 3, 500)
		if got := h.b.ProbeIn()[""]; got != cooldown {
			t.Fatalf("just opened: got %v, want %v", got, cooldown)
		}
		time.Sleep(4 * time.Second)
		if got := h.b.ProbeIn()[""]; got != cooldown-4*time.Second {
			t.Fatalf("4s later: got %v, want %v", got, cooldown-4*time.Second)
		}
		time.Sleep(cooldown)
		if got := h.b.ProbeIn(); len(got) != 0 {
			t.Fatalf("cooldown over (half-open): got %v, want no entry", got)
		}
	})
}

func TestHedgeDelay(t *testing.T) {
	l := middleware.NewLatencies()
	for _, d := range []time.Duration{10, 20, 300} {
		l.Observe(d * time.Millisecond)
	}
	tests := []struct {
		name string
		s    middleware.HedgeSettings
		l    *middleware.Latencies
		want time.Duration
	}{
		{"fixed", middleware.HedgeSettings{Delay: 50 * time.Millisecond}, l, 50 * time.Millisecond},
		{"negative reads 0", middleware.HedgeSettings{Delay: -time.Second}, nil, 0},
		{"percentile above delay", middleware.HedgeSettings{Delay: 50 * time.Millisecond, DelayPercentile: 0.9}, l, 300 * time.Millisecond},
		{"percentile below delay", middleware.HedgeSettings{Delay: 50 * time.Millisecond, DelayPercentile: 0.3}, l, 50 * time.Millisecond},
		{"no latencies yet", middleware.HedgeSettings{Delay: 50 * time.Millisecond, DelayPercentile: 0.9}, nil, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := middleware.HedgeDelay(tt.s, tt.l); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
