package otelswitchboard_test

import (
	"errors"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/internal/fakert"
)

// TestNoSecretReachesTelemetry sends a token in the query (and a password
// in the userinfo) through retries, a transport error that quotes the
// URL, a breaker that opens and rejects: no span name, attribute, status,
// span event or metric attribute holds either secret.
func TestNoSecretReachesTelemetry(t *testing.T) {
	const token, password = "s3cr3t", "pa55w0rd"
	raw := "http://user:" + password + "@billing.test/v1/invoices?token=" + token + "&page=2"
	h := newHarness(t, baseConfig(map[string]func(*config.ClientConfig){
		"billing": func(c *config.ClientConfig) {
			c.Retry.MaxRetries = 2
			c.CircuitBreaker.Enabled = true
			c.CircuitBreaker.FailureThreshold = 1
			c.CircuitBreaker.Cooldown = time.Hour
		},
	}), fakert.New(
		fakert.Step{Status: 503},
		fakert.Step{Err: errors.New("dial " + raw + ": connection refused (token=" + token + ")")},
		fakert.Step{Status: 503},
	))
	c := h.reg.Get("billing")
	get(t, c, raw)
	get(t, c, raw) // rejected by the open breaker

	var checked int
	check := func(where, s string) {
		checked++
		if strings.Contains(s, token) || strings.Contains(s, password) {
			t.Errorf("%s holds a secret: %q", where, s)
		}
	}
	checkAttrs := func(where string, kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			check(where+" "+string(kv.Key), kv.Value.Emit())
		}
	}
	spans := h.spans.Ended()
	if len(spans) < 5 {
		t.Fatalf("got %d spans, want at least 5", len(spans))
	}
	for _, s := range spans {
		check("span name", s.Name())
		check("span status", s.Status().Description)
		checkAttrs("span "+s.Name(), s.Attributes())
		for _, e := range s.Events() {
			check("span event name", e.Name)
			checkAttrs("span event "+e.Name, e.Attributes)
		}
	}
	for name, m := range h.collect(t) {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				checkAttrs(name, p.Attributes.ToSlice())
			}
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				checkAttrs(name, p.Attributes.ToSlice())
			}
		case metricdata.Gauge[int64]:
			for _, p := range d.DataPoints {
				checkAttrs(name, p.Attributes.ToSlice())
			}
		case metricdata.Gauge[float64]:
			for _, p := range d.DataPoints {
				checkAttrs(name, p.Attributes.ToSlice())
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d strings; the scenario did not run", checked)
	}
	// The redacted URL is there, so the check above looked at the right place.
	if got := attrs(spans[0].Attributes())["url.full"]; got != "http://billing.test/v1/invoices?token=REDACTED&page=2" {
		t.Errorf("url.full %q, want the redacted URL", got)
	}
}

// TestNoGoroutinePerRequest: 1,000 requests through the adapter start no
// goroutine (the runtime's count of goroutines created, not only of those
// alive) and leave the goroutine count where it was.
func TestNoGoroutinePerRequest(t *testing.T) {
	h := newHarness(t, baseConfig(map[string]func(*config.ClientConfig){"api": func(*config.ClientConfig) {}}), fakert.Status(200))
	c := h.reg.Get("api")
	get(t, c, "http://api.test/") // the first call resolves the client's name
	before, created := runtime.NumGoroutine(), goroutinesCreated()
	for range 1000 {
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// A few for the runtime's own (GC workers, timers), never one per request.
	if n := goroutinesCreated() - created; n > 20 {
		t.Errorf("%d goroutines created by 1000 requests, want none per request", n)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines: %d before 1000 requests, %d after", before, after)
	}
	if n := len(h.spans.Ended()); n != 2*1001 {
		t.Errorf("%d spans, want %d", n, 2*1001)
	}
}

// goroutinesCreated reads the runtime's count of goroutines ever created.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
