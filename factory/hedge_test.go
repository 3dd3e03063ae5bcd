package factory_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// TestHedgeEnabledFromConfig switches hedging on with hedge.enabled alone,
// as the scenario harness does: a slow first attempt loses to its hedge.
func TestHedgeEnabledFromConfig(t *testing.T) {
	var n atomic.Int64
	slowFirst := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			close(slowFirst)
			return
		}
		w.Write([]byte("hedged"))
	})
	var won atomic.Int64
	obs := middleware.ObserverFunc(func(_ context.Context, e middleware.Event) {
		if e.Name == middleware.EventHedgeWon && e.Attempt == 2 {
			won.Add(1)
		}
	})
	r, _ := openFile(t, "clients:\n  billing:\n    hedge: {enabled: true, delay: 20ms}\n", factory.Options{Logger: discard(), Observer: obs})
	resp := get(t, r.Get("billing"), srv.URL)
	if resp.StatusCode != 200 {
		t.Fatalf("status: got %d, want 200", resp.StatusCode)
	}
	<-slowFirst
	if got := won.Load(); got != 1 {
		t.Fatalf("hedge.won with attempt 2: got %d events, want 1", got)
	}
	if got := n.Load(); got != 2 {
		t.Fatalf("server hits: got %d, want 2", got)
	}
}

// TestHooksBackoffReplacesTheSchedule checks that Hooks.Backoff reaches the
// retry layer.
func TestHooksBackoffReplacesTheSchedule(t *testing.T) {
	srv := newServer(t, status(503))
	var calls atomic.Int64
	o := factory.Options{Logger: discard(), Hooks: factory.Hooks{
		Backoff: func(attempt int, resp *http.Response, err error) time.Duration {
			calls.Add(1)
			return time.Millisecond
		},
	}}
	r, _ := openFile(t, "clients:\n  billing:\n    retry: {max_retries: 2, initial_backoff: 1h, max_backoff: 1h, jitter: none}\n", o)
	start := time.Now()
	get(t, r.Get("billing"), srv.URL)
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("call took %v: the 1h schedule was used", d)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("Backoff calls: got %d, want 2", got)
	}
}
