package otelswitchboard_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
	otelswitchboard "github.com/switchboard-http/switchboard/otel"
)

const billingOK = "http.request.method=GET,http.response.status_code=200,server.address=billing.test,server.port=80,switchboard.client=billing"

// TestCallBeforeRegister: a call made before Register reports
// switchboard.client on its metrics and spans, as one made after does;
// Register adds the gauges.
func TestCallBeforeRegister(t *testing.T) {
	h := newHarnessWith(t, baseConfig(map[string]func(*config.ClientConfig){"billing": func(*config.ClientConfig) {}}),
		fakert.Status(200), harnessOptions{noRegister: true})
	get(t, h.reg.Get("billing"), "http://billing.test/")
	ms := h.collect(t)
	wantPoints(t, ms, otelswitchboard.MetricCallDuration, map[string]float64{billingOK: 1})
	wantPoints(t, ms, otelswitchboard.MetricAttemptDuration, map[string]float64{billingOK: 1})
	wantPoints(t, ms, otelswitchboard.MetricGeneration, nil)
	spans := h.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2 (attempt, call)", len(spans))
	}
	for _, s := range spans {
		if got := attrs(s.Attributes())["switchboard.client"]; got != "billing" {
			t.Errorf("span %q: switchboard.client %q, want billing", s.Name(), got)
		}
	}

	h.register(t)
	get(t, h.reg.Get("billing"), "http://billing.test/")
	ms = h.collect(t)
	wantPoints(t, ms, otelswitchboard.MetricCallDuration, map[string]float64{billingOK: 2})
	wantPoints(t, ms, otelswitchboard.MetricGeneration, map[string]float64{"": 1})
}

// TestInstrumentKeepsLayersInside: the middleware of Options.Hooks, of a
// HooksFor set before Instrument and of ClientHooks all run inside the
// adapter's spans, in the factory's order; the chained HooksFor gets the
// client's name and keeps its funcs (ShouldRetry here).
func TestInstrumentKeepsLayersInside(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	mark := func(what string) middleware.Middleware {
		return func(next http.RoundTripper) http.RoundTripper {
			return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				in := "no span"
				if s, ok := trace.SpanFromContext(req.Context()).(sdktrace.ReadOnlySpan); ok {
					in = s.Name()
				}
				mu.Lock()
				seen = append(seen, what+" in "+in)
				mu.Unlock()
				return next.RoundTrip(req)
			})
		}
	}
	noRetry := func(*http.Request, *http.Response, error) bool { return false }
	h := newHarnessWith(t, baseConfig(map[string]func(*config.ClientConfig){
		"billing": func(c *config.ClientConfig) { c.Retry.MaxRetries = 1 },
	}), fakert.Status(503), harnessOptions{setup: func(o *factory.Options) {
		o.Hooks = factory.Hooks{Outer: []middleware.Middleware{mark("hooks")}, Attempt: []middleware.Middleware{mark("hooks attempt")}}
		o.HooksFor = func(name string) factory.Hooks {
			return factory.Hooks{
				Outer:       []middleware.Middleware{mark("for " + name)},
				Attempt:     []middleware.Middleware{mark("for " + name + " attempt")},
				ShouldRetry: noRetry,
			}
		}
		o.ClientHooks = map[string]factory.Hooks{"billing": {Outer: []middleware.Middleware{mark("own")}}}
	}})
	get(t, h.reg.Get("billing"), "http://billing.test/")
	want := []string{
		"hooks in " + otelswitchboard.CallSpanName,
		"for billing in " + otelswitchboard.CallSpanName,
		"own in " + otelswitchboard.CallSpanName,
		"hooks attempt in GET",
		"for billing attempt in GET",
	}
	if strings.Join(seen, "; ") != strings.Join(want, "; ") {
		t.Errorf("layers ran\n\t%s\nwant\n\t%s", strings.Join(seen, "; "), strings.Join(want, "; "))
	}
	const failed = "error.type=503,http.request.method=GET,http.response.status_code=503,server.address=billing.test,server.port=80,switchboard.client=billing"
	wantPoints(t, h.collect(t), otelswitchboard.MetricAttemptDuration, map[string]float64{failed: 1})
}

// TestHooksForByHand: Options.Observer and Options.HooksFor set by hand,
// without Instrument, label every client.
func TestHooksForByHand(t *testing.T) {
	h := newHarnessWith(t, baseConfig(map[string]func(*config.ClientConfig){
		"billing": func(*config.ClientConfig) {}, "search": func(*config.ClientConfig) {},
	}), fakert.Status(200), harnessOptions{wire: func(tel *otelswitchboard.Telemetry, o *factory.Options) {
		o.Observer = tel
		o.HooksFor = tel.HooksFor
	}})
	get(t, h.reg.Get("billing"), "http://billing.test/")
	get(t, h.reg.Get("search"), "http://search.test/")
	ms := h.collect(t)
	for _, name := range []string{otelswitchboard.MetricCallDuration, otelswitchboard.MetricAttemptDuration} {
		wantPoints(t, ms, name, map[string]float64{
			billingOK: 1,
			"http.request.method=GET,http.response.status_code=200,server.address=search.test,server.port=80,switchboard.client=search": 1,
		})
	}
}

// Instrument keeps every field of the application's own HooksFor, Backoff
// included (it once kept only four of them).
func TestInstrumentKeepsTheApplicationsBackoff(t *testing.T) {
	var calls atomic.Int64
	h := newHarnessWith(t, baseConfig(map[string]func(*config.ClientConfig){
		"billing": func(c *config.ClientConfig) { c.Retry.MaxRetries = 1 },
	}), fakert.Status(503, 200), harnessOptions{setup: func(o *factory.Options) {
		o.HooksFor = func(string) factory.Hooks {
			return factory.Hooks{Backoff: func(int, *http.Response, error) time.Duration { calls.Add(1); return 0 }}
		}
	}})
	resp, err := get(t, h.reg.Get("billing"), "http://billing.test/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := calls.Load(); n != 1 {
		t.Fatalf("the application's Backoff ran %d times, want 1", n)
	}
}
