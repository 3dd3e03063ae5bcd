package factory_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// queueing returns a client with a 100ms timeout, no retries and a
// bulkhead of one slot whose callers wait up to a minute, so that its
// queued calls end with the timeout; its breaker is set by breaker.
func queueing(breaker func(*middleware.BreakerSettings)) config.ClientConfig {
	c := config.Default()
	c.Timeout = 100 * time.Millisecond
	c.Retry.MaxRetries = 0
	c.Bulkhead.MaxConcurrent, c.Bulkhead.MaxWait = 1, time.Minute
	c.CircuitBreaker.Enabled = true
	breaker(&c.CircuitBreaker)
	return c
}

// hold makes a call through c whose response body, left open, holds the
// bulkhead's slot; close the body to free it.
func hold(t *testing.T, c *http.Client) *http.Response {
	t.Helper()
	resp, err := c.Get("http://svc.test/held")
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// queued makes n calls through c that wait for the held slot until the
// timeout ends them, and checks their errors.
func queued(t *testing.T, c *http.Client, n int) {
	t.Helper()
	for i := range n {
		err := getErr(c, "http://svc.test/queued")
		if !errors.Is(err, middleware.ErrBulkheadFull) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("queued call %d: got %v, want an error matching ErrBulkheadFull and context.DeadlineExceeded", i+1, err)
		}
	}
}

// TestBulkheadQueueingDoesNotOpenTheBreaker: with the backend answering
// 200 to every call it gets, two calls that time out waiting for a
// bulkhead slot leave a threshold-2 breaker closed (they opened it).
func TestBulkheadQueueingDoesNotOpenTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := fakert.New(fakert.Step{Body: "ok"})
		r, err := factory.New(groupConfig(map[string]config.ClientConfig{
			"svc": queueing(func(b *middleware.BreakerSettings) { b.FailureThreshold, b.Cooldown = 2, time.Hour }),
		}), factory.Options{Logger: discard(), Base: backend})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c := r.Get("svc")
		held := hold(t, c)
		queued(t, c, 2)
		if st := clientStatus(t, r, "svc"); st.Breaker[""] != "closed" {
			t.Fatalf("breaker after two calls timed out in the queue: got %v, want closed", st.Breaker)
		}
		held.Body.Close()
		if err := getErr(c, "http://svc.test/after"); err != nil {
			t.Fatalf("a call once the slot is free: %v", err)
		}
		if n := backend.Calls(); n != 2 {
			t.Errorf("backend saw %d calls, want 2", n)
		}
	})
}

// TestGroupMemberQueueingLeavesTheSharedAdaptiveBreakerAlone: in a
// circuit_breaker.group of adaptive mode, one member's calls that time out
// waiting for its bulkhead do not count for the breaker the group shares:
// the rejection probability every member faces stays 0.
func TestGroupMemberQueueingLeavesTheSharedAdaptiveBreakerAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		adaptive := func(b *middleware.BreakerSettings) {
			b.Mode, b.AdaptiveK, b.Window, b.Group = middleware.BreakerAdaptive, 2, time.Minute, "backend"
		}
		other := queueing(adaptive)
		other.Bulkhead.MaxConcurrent = 0 // unlimited: only "queueing" queues
		r, err := factory.New(groupConfig(map[string]config.ClientConfig{
			"queueing": queueing(adaptive), "other": other,
		}), factory.Options{Logger: discard(), Base: fakert.New(fakert.Step{Body: "ok"})})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		held := hold(t, r.Get("queueing"))
		defer held.Body.Close()
		queued(t, r.Get("queueing"), 3)
		for _, name := range []string{"queueing", "other"} {
			if p := clientStatus(t, r, name).BreakerRejectProbability[""]; p != 0 {
				t.Errorf("%s: shared rejection probability after one member's queueing: got %v, want 0", name, p)
			}
		}
	})
}
