package otelswitchboard_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
	otelswitchboard "github.com/switchboard-http/switchboard/otel"
)

// TestAttemptTimeoutEventOnTheAttemptSpan guards the deviation where the
// timeout.exceeded event of an attempt cut by attempt_timeout was put on
// the call span, though events of the layers inside Retry go on the
// attempt's span: it goes on the span of the attempt it cut, whose
// error.type is attempt_timeout; the call span has the retry.attempt.
func TestAttemptTimeoutEventOnTheAttemptSpan(t *testing.T) {
	rt := fakert.New(fakert.Step{Delay: time.Hour}, fakert.Step{})
	h := newHarness(t, baseConfig(map[string]func(*config.ClientConfig){
		"billing": func(c *config.ClientConfig) {
			c.Retry.MaxRetries = 1
			c.Retry.AttemptTimeout = 20 * time.Millisecond
		},
	}), rt)
	resp, err := get(t, h.reg.Get("billing"), "http://billing.test/v1")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v, %v; want 200 from the second attempt", resp, err)
	}
	spans := h.spans.Ended()
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want 3 (2 attempts, 1 call)", len(spans))
	}
	cut, second, call := spans[0], spans[1], spans[2]
	if call.Name() != otelswitchboard.CallSpanName || cut.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Fatalf("spans %q, %q, %q: want attempt, attempt, call", cut.Name(), second.Name(), call.Name())
	}
	ev := cut.Events()
	if len(ev) != 1 || ev[0].Name != middleware.EventTimeoutExceeded {
		t.Fatalf("cut attempt's span events %v, want one %s", ev, middleware.EventTimeoutExceeded)
	}
	wantAttrs(t, "event", ev[0].Attributes, map[string]string{
		"event": "timeout.exceeded", "client": "billing", "method": "GET", "url": "http://billing.test/v1",
		"host": "billing.test", "attempt": "1", "delay": "20ms", "error": "fakert: request ended while waiting: context deadline exceeded",
		"reason": "attempt_timeout",
	})
	if got := attrs(cut.Attributes())["error.type"]; got != "attempt_timeout" {
		t.Errorf("cut attempt's error.type %q, want attempt_timeout", got)
	}
	if len(second.Events()) != 0 {
		t.Errorf("second attempt's span events %v, want none", second.Events())
	}
	for _, e := range call.Events() {
		if e.Name == middleware.EventTimeoutExceeded {
			t.Errorf("call span has a %s event: want it on the attempt's span", e.Name)
		}
	}
	if ev := call.Events(); len(ev) != 1 || ev[0].Name != middleware.EventRetryAttempt {
		t.Errorf("call span events %v, want one retry.attempt", ev)
	}
	if !cut.EndTime().After(cut.StartTime()) {
		t.Errorf("cut attempt's span ends at %v, not after its start %v", cut.EndTime(), cut.StartTime())
	}
}

// TestUnknownMethodSpanIsNamedHTTP guards the deviation where the span of
// an attempt with a method outside the known set was named "_OTHER": the
// conventions name it "HTTP", with http.request.method "_OTHER" and the
// method itself in http.request.method_original.
func TestUnknownMethodSpanIsNamedHTTP(t *testing.T) {
	h := newHarness(t, baseConfig(map[string]func(*config.ClientConfig){"api": func(*config.ClientConfig) {}}), fakert.Status(200))
	req, err := http.NewRequest("PURGE", "http://api.test/cache", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.reg.Get("api").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	spans := h.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	attempt, call := spans[0], spans[1]
	if attempt.Name() != "HTTP" {
		t.Errorf("attempt span named %q, want HTTP", attempt.Name())
	}
	for _, s := range spans {
		got := attrs(s.Attributes())
		if got["http.request.method"] != "_OTHER" || got["http.request.method_original"] != "PURGE" {
			t.Errorf("span %q: http.request.method %q, http.request.method_original %q; want _OTHER, PURGE",
				s.Name(), got["http.request.method"], got["http.request.method_original"])
		}
	}
	if call.Name() != otelswitchboard.CallSpanName {
		t.Errorf("call span named %q, want %q", call.Name(), otelswitchboard.CallSpanName)
	}
	for name, m := range h.collect(t) {
		for k := range points(t, m) {
			if strings.Contains(k, "PURGE") {
				t.Errorf("metric %s has a point %q with the raw method: want it bounded", name, k)
			}
		}
	}
}

// TestRedirectHopHasResendCount guards the deviation where the attempt of
// a redirect hop had no http.request.resend_count: the conventions count
// every resend, a redirect's as a retry's.
func TestRedirectHopHasResendCount(t *testing.T) {
	rt := fakert.New(
		fakert.Step{Status: http.StatusFound, Header: http.Header{"Location": {"/b"}}},
		fakert.Step{Status: http.StatusFound, Header: http.Header{"Location": {"/c"}}},
		fakert.Step{},
	)
	h := newHarness(t, baseConfig(map[string]func(*config.ClientConfig){"api": func(*config.ClientConfig) {}}), rt)
	resp, err := get(t, h.reg.Get("api"), "http://api.test/a")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v, %v; want 200 after two redirects", resp, err)
	}
	var attempts []map[string]string
	for _, s := range h.spans.Ended() {
		if s.Name() != otelswitchboard.CallSpanName {
			attempts = append(attempts, attrs(s.Attributes()))
		}
	}
	if len(attempts) != 3 {
		t.Fatalf("got %d attempt spans, want 3 (one per hop)", len(attempts))
	}
	for i, want := range []string{"", "1", "2"} {
		if got := attempts[i]["http.request.resend_count"]; got != want {
			t.Errorf("hop %d: http.request.resend_count %q, want %q", i+1, got, want)
		}
	}
}

// TestBulkheadWaitCutByTimeoutIsReportedAsARejection: error.type follows
// middleware.Classify: a call whose wait for a bulkhead slot the total
// timeout ended is bulkhead_full, a local rejection, not a timeout of the
// backend.
func TestBulkheadWaitCutByTimeoutIsReportedAsARejection(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	slow := middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		entered <- struct{}{}
		<-release
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
	})
	h := newHarness(t, baseConfig(map[string]func(*config.ClientConfig){
		"billing": func(c *config.ClientConfig) {
			c.Timeout = 50 * time.Millisecond
			c.Retry.MaxRetries = 0
			c.Bulkhead.MaxConcurrent = 1
			c.Bulkhead.MaxWait = time.Hour
		},
	}), slow)
	c := h.reg.Get("billing")
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		req, _ := http.NewRequestWithContext(middleware.WithOverrides(ctx, middleware.Overrides{Timeout: ptr(time.Hour)}), http.MethodGet, "http://billing.test/hold", nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	_, err := get(t, c, "http://billing.test/queued")
	close(release)
	<-done
	if !errors.Is(err, middleware.ErrBulkheadFull) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued call: got %v, want ErrBulkheadFull and context.DeadlineExceeded", err)
	}
	var queued map[string]string
	for _, s := range h.spans.Ended() {
		if a := attrs(s.Attributes()); a["url.full"] == "http://billing.test/queued" {
			queued = a
		}
	}
	if queued["error.type"] != "bulkhead_full" {
		t.Errorf("queued call's error.type %q, want bulkhead_full", queued["error.type"])
	}
}

func ptr[T any](v T) *T { return &v }
