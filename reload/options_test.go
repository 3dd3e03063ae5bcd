package reload

import (
	"log/slog"
	"testing"
	"time"
)

func TestOptionsDefaults(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name string
		in   Options
		want time.Duration
	}{
		{"zero debounce is the default", Options{}, DefaultDebounce},
		{"negative debounce is the default", Options{Debounce: -time.Second}, DefaultDebounce},
		{"positive debounce is kept", Options{Debounce: time.Second, Logger: logger}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.withDefaults()
			if got.Debounce != tt.want {
				t.Errorf("got Debounce %v, want %v", got.Debounce, tt.want)
			}
			wantLogger := tt.in.Logger
			if wantLogger == nil {
				wantLogger = slog.Default()
			}
			if got.Logger != wantLogger {
				t.Errorf("got Logger %p, want %p", got.Logger, wantLogger)
			}
		})
	}
}

func TestBackoffDoublesUpToMaxAndResets(t *testing.T) {
	b := backoff{min: 100 * time.Millisecond, max: 5 * time.Second}
	var got []time.Duration
	for range 8 {
		got = append(got, b.next())
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	b.reset()
	if d := b.next(); d != 100*ms {
		t.Errorf("after reset got %v, want %v", d, 100*ms)
	}
}
