package factory_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// TestApplySeesNilToEmptyRetryList guards a change that Equal could not
// see: in code, a nil retryable_status means the default list and []int{}
// means none. Apply of that change must rebuild the client, so that a 503
// is no longer retried.
func TestApplySeesNilToEmptyRetryList(t *testing.T) {
	var calls atomic.Int64
	base := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		calls.Add(1)
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: http.NoBody, Request: req}, nil
	})
	cfg := func(status []int) config.Config {
		c := config.Default()
		c.Retry.InitialBackoff, c.Retry.MaxBackoff = time.Microsecond, time.Microsecond
		c.Retry.RetryableStatus = status
		return config.Config{Defaults: c, Clients: map[string]config.ClientConfig{"svc": c}}
	}
	r, err := factory.New(cfg(nil), factory.Options{Base: base, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	send := func() int64 {
		t.Helper()
		calls.Store(0)
		resp, err := r.Get("svc").Get("http://svc.test/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return calls.Load()
	}
	if got, want := send(), int64(1+middleware.DefaultMaxRetries); got != want {
		t.Fatalf("nil retryable_status: got %d attempts, want %d (503 is in the default list)", got, want)
	}
	if err := r.Apply(cfg([]int{})); err != nil {
		t.Fatal(err)
	}
	if got := send(); got != 1 {
		t.Errorf("after Apply of retryable_status []: got %d attempts, want 1 (the change was skipped)", got)
	}
}
