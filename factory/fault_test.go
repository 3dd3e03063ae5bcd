package factory_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/logcapture"
	"github.com/switchboard-http/switchboard/middleware"
)

// faulty is a client whose every attempt is aborted with a 503, retried
// twice, behind a breaker of threshold 2.
func faulty() config.ClientConfig {
	c := config.Default()
	c.Retry.MaxRetries = 2
	c.Retry.InitialBackoff, c.Retry.MaxBackoff = 0, 0
	c.CircuitBreaker.Enabled = true
	c.CircuitBreaker.FailureThreshold = 2
	c.Fault.Enabled = true
	c.Fault.Abort.Percent = 100
	c.Fault.Abort.Status = 503
	return c
}

// Injected aborts act like a real outage for every layer above them (retry
// retries them, the breaker opens), and none reaches the network. Turning
// faults off by reload takes effect on the next call; while they are on,
// every load logs a WARN and Status shows them.
func TestFaultsAreSeenByRetryAndBreakerNeverByTheNetwork(t *testing.T) {
	srv := newServer(t, status(200))
	log, logs := logcapture.New()
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": faulty()}}
	r, err := factory.New(cfg, factory.Options{Logger: log, Hooks: factory.Hooks{FaultSeed: 7}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := r.Get("billing")

	for i := range 2 {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("X-Switchboard-Fault") != "abort" {
			t.Fatalf("call %d: got %d (fault header %q), want the injected 503", i, resp.StatusCode, resp.Header.Get("X-Switchboard-Fault"))
		}
	}
	if _, err := c.Get(srv.URL); !errors.Is(err, middleware.ErrCircuitOpen) {
		t.Fatalf("third call: got %v, want ErrCircuitOpen (two faulted calls opened it)", err)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("server hits: got %d, want 0 (aborted attempts are never sent)", n)
	}
	var injected int
	for _, rec := range logs.Records(t, middleware.EventFaultInjected) {
		if rec["reason"] == "abort" {
			injected++
		}
	}
	if injected != 6 {
		t.Fatalf("fault.injected events: got %d, want 6 (2 calls × 3 attempts)", injected)
	}
	if warns := logs.Records(t, "fault injection is on: attempts of this client are aborted or delayed on purpose"); len(warns) != 1 {
		t.Fatalf("WARNs at load with faults on: got %d, want 1", len(warns))
	}
	if st := clientStatus(t, r, "billing"); st.Fault == nil || st.Fault.Abort.Percent != 100 {
		t.Fatalf("Status fault: got %+v, want the enabled fault block", st.Fault)
	}

	// Off by reload: the next call goes to the network (the breaker is
	// off too, so its open state does not hide the change).
	off := faulty()
	off.Fault.Enabled = false
	off.CircuitBreaker.Enabled = false
	if err := r.Apply(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": off}}); err != nil {
		t.Fatal(err)
	}
	get(t, c, srv.URL)
	if n := srv.hits.Load(); n != 1 {
		t.Fatalf("server hits after faults were switched off: got %d, want 1", n)
	}
	if st := clientStatus(t, r, "billing"); st.Fault != nil {
		t.Fatalf("Status fault after switching off: got %+v, want nil", st.Fault)
	}
	if warns := logs.Records(t, "fault injection is on: attempts of this client are aborted or delayed on purpose"); len(warns) != 1 {
		t.Fatalf("WARNs after the reload that switched faults off: got %d, want still 1", len(warns))
	}
}

// A bad fault block is rejected naming the key.
func TestFaultValidation(t *testing.T) {
	for _, tt := range []struct {
		edit func(*config.ClientConfig)
		want string
	}{
		{func(c *config.ClientConfig) { c.Fault.Abort.Percent = 101 }, "clients.billing.fault.abort.percent: must be in [0, 100], got 101"},
		{func(c *config.ClientConfig) { c.Fault.Delay.Percent = -1 }, "clients.billing.fault.delay.percent: must be in [0, 100], got -1"},
		{func(c *config.ClientConfig) { c.Fault.Abort.Status = 42 }, "clients.billing.fault.abort.status: must be a final HTTP status in [200, 599], got 42"},
		{func(c *config.ClientConfig) { c.Fault.Delay.Percent = 5 }, "clients.billing.fault.delay.duration: must be > 0 when fault.delay.percent is set"},
		{func(c *config.ClientConfig) { c.Fault.Header = "bad header" }, "clients.billing.fault.header: must be an HTTP header name"},
	} {
		c := config.Default()
		tt.edit(&c)
		_, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}}, factory.Options{Logger: discard()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want an error containing %q", err, tt.want)
		}
	}
}

// Adaptive throttling from the file: a backend that fails drives the
// rejection probability up, which Status reports; throttled calls carry
// ErrCircuitOpen and never reach the network; a reload back to a mode
// without throttling takes effect on the next call.
func TestAdaptiveThrottlingFromTheFile(t *testing.T) {
	srv := newServer(t, status(503))
	c := config.Default()
	c.Retry.MaxRetries = 0
	c.CircuitBreaker.Enabled = true
	c.CircuitBreaker.Mode = middleware.BreakerAdaptive
	c.CircuitBreaker.AdaptiveK = 2
	c.CircuitBreaker.Window = time.Minute
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": c}}
	r, err := factory.New(cfg, factory.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	client := r.Get("billing")
	throttled := 0
	for range 200 {
		if err := getErr(client, srv.URL); errors.Is(err, middleware.ErrCircuitOpen) {
			throttled++
		}
	}
	sent := int(srv.hits.Load())
	if throttled == 0 || sent+throttled != 200 {
		t.Fatalf("200 calls to a failing backend: %d throttled, %d sent; want some throttled and the rest sent", throttled, sent)
	}
	p := clientStatus(t, r, "billing").BreakerRejectProbability[""]
	if want := float64(200) / 201; math.Abs(p-want) > 1e-9 { // 200 requests, 0 accepts
		t.Fatalf("Status rejection probability: got %v, want %v", p, want)
	}

	c.CircuitBreaker.Mode = middleware.BreakerConsecutive
	c.CircuitBreaker.FailureThreshold = 1000
	cfg.Clients = map[string]config.ClientConfig{"billing": c}
	if err := r.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := getErr(client, srv.URL); err != nil {
			t.Fatalf("after switching adaptive off: %v, want the call sent", err)
		}
	}
	if clientStatus(t, r, "billing").BreakerRejectProbability != nil {
		t.Fatal("Status still reports a rejection probability after switching adaptive off")
	}
}
