package otelswitchboard_test

import (
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/internal/fakert"
	otelswitchboard "github.com/switchboard-http/switchboard/otel"
)

// TestRetriedCall is 503, 503, 200: one call span, three attempt spans
// that resend_count tells apart, two retry.attempt span events on the
// call, the trace context in every attempt's headers, and the metric
// points of each.
func TestRetriedCall(t *testing.T) {
	rt := fakert.Status(503, 503, 200)
	h := newHarness(t, baseConfig(map[string]func(*config.ClientConfig){
		"billing": func(c *config.ClientConfig) { c.Retry.MaxRetries = 3 },
	}), rt)

	req, err := http.NewRequest(http.MethodGet, "http://billing.test:8080/v1/invoices/42", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.reg.Get("billing").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if len(req.Header) != 0 {
		t.Errorf("caller's request headers changed: %v", req.Header)
	}

	spans := h.spans.Ended()
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 4 (3 attempts, 1 call)", len(spans))
	}
	call := spans[3]
	if call.Name() != otelswitchboard.CallSpanName || call.SpanKind() != trace.SpanKindInternal {
		t.Errorf("call span %q kind %v, want %q internal", call.Name(), call.SpanKind(), otelswitchboard.CallSpanName)
	}
	wantAttrs(t, "call span", call.Attributes(), map[string]string{
		"switchboard.client": "billing", "http.request.method": "GET", "server.address": "billing.test",
		"server.port": "8080", "url.full": "http://billing.test:8080/v1/invoices/42", "http.response.status_code": "200",
	})
	if call.Status().Code != codes.Unset {
		t.Errorf("call status %v, want unset", call.Status())
	}
	ev := call.Events()
	if len(ev) != 2 {
		t.Fatalf("call span has %d events, want 2 retry.attempt", len(ev))
	}
	for i, e := range ev {
		wantAttrs(t, "event "+e.Name, e.Attributes, map[string]string{
			"event": "retry.attempt", "client": "billing", "method": "GET", "url": "http://billing.test:8080/v1/invoices/42",
			"host": "billing.test:8080", "attempt": itoa(i + 2), "status": "503", "delay": "1ms",
		})
	}

	seen := rt.Requests()
	for i, a := range spans[:3] {
		if a.Name() != "GET" || a.SpanKind() != trace.SpanKindClient {
			t.Errorf("attempt %d: span %q kind %v, want GET client", i+1, a.Name(), a.SpanKind())
		}
		if a.Parent().SpanID() != call.SpanContext().SpanID() {
			t.Errorf("attempt %d: parent %v, want the call span %v", i+1, a.Parent().SpanID(), call.SpanContext().SpanID())
		}
		want := map[string]string{
			"switchboard.client": "billing", "http.request.method": "GET", "server.address": "billing.test",
			"server.port": "8080", "url.full": "http://billing.test:8080/v1/invoices/42",
			"http.response.status_code": "503", "error.type": "503",
		}
		if i > 0 {
			want["http.request.resend_count"] = itoa(i)
		}
		if i == 2 {
			want["http.response.status_code"] = "200"
			delete(want, "error.type")
		}
		wantAttrs(t, "attempt "+itoa(i+1), a.Attributes(), want)
		if wantErr := i < 2; (a.Status().Code == codes.Error) != wantErr {
			t.Errorf("attempt %d: status %v, want error %v", i+1, a.Status(), wantErr)
		}
		// The backend got this very span as its parent.
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(t.Context(), propagation.HeaderCarrier(seen[i].Header)))
		if sc.TraceID() != a.SpanContext().TraceID() || sc.SpanID() != a.SpanContext().SpanID() {
			t.Errorf("attempt %d: traceparent %q, want span %v", i+1, seen[i].Header.Get("traceparent"), a.SpanContext())
		}
	}

	ms := h.collect(t)
	wantPoints(t, ms, otelswitchboard.MetricAttemptDuration, map[string]float64{
		"error.type=503,http.request.method=GET,http.response.status_code=503,server.address=billing.test,server.port=8080,switchboard.client=billing": 2,
		"http.request.method=GET,http.response.status_code=200,server.address=billing.test,server.port=8080,switchboard.client=billing":                1,
	})
	wantPoints(t, ms, otelswitchboard.MetricCallDuration, map[string]float64{
		"http.request.method=GET,http.response.status_code=200,server.address=billing.test,server.port=8080,switchboard.client=billing": 1,
	})
	wantPoints(t, ms, otelswitchboard.MetricEvents, map[string]float64{
		"event.name=retry.attempt,switchboard.client=billing": 2,
	})
	wantPoints(t, ms, otelswitchboard.MetricGeneration, map[string]float64{"": 1})
	wantPoints(t, ms, otelswitchboard.MetricBreakerState, nil)
	wantPoints(t, ms, otelswitchboard.MetricBulkheadInUse, nil)
	wantPoints(t, ms, otelswitchboard.MetricLimiterTokens, nil)
	if got := points(t, ms[otelswitchboard.MetricBudgetBalance]); len(got) != 1 {
		t.Errorf("budget balance points %v, want one for billing", got)
	}
	if u := ms[otelswitchboard.MetricAttemptDuration].Unit; u != "s" {
		t.Errorf("attempt duration unit %q, want s", u)
	}
}

// TestParentTraceIsContinued: a call made under a caller's span joins its
// trace, the call span a child of the caller's, the attempt of the call's.
func TestParentTraceIsContinued(t *testing.T) {
	rt := fakert.Status(200)
	h := newHarness(t, baseConfig(map[string]func(*config.ClientConfig){"api": func(*config.ClientConfig) {}}), rt)
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(t.Context())
	ctx, parent := tp.Tracer("caller").Start(t.Context(), "handler")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.test/x", nil)
	resp, err := h.reg.Get("api").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	parent.End()
	spans := h.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	for _, s := range spans {
		if s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("span %s in trace %v, want the caller's %v", s.Name(), s.SpanContext().TraceID(), parent.SpanContext().TraceID())
		}
	}
	if p := spans[1].Parent().SpanID(); p != parent.SpanContext().SpanID() {
		t.Errorf("call span's parent %v, want the caller's span", p)
	}
	wantAttrs(t, "attempt", spans[0].Attributes(), map[string]string{
		"switchboard.client": "api", "http.request.method": "GET", "server.address": "api.test",
		"server.port": "443", "url.full": "https://api.test/x", "http.response.status_code": "200",
	})
}

func wantAttrs(t *testing.T, what string, kvs []attribute.KeyValue, want map[string]string) {
	t.Helper()
	got := attrs(kvs)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected attribute %s = %q", what, k, v)
		}
	}
}
