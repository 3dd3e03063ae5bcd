package otelswitchboard

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// CallSpanName is the name of the span of a logical call; each attempt's
// span is named after its method, as the semantic conventions ask.
const CallSpanName = "switchboard.call"

// outer is the Outer middleware: one callRT per pipeline a registry builds.
func (t *Telemetry) outer(next http.RoundTripper) http.RoundTripper {
	return &callRT{t: t, next: next}
}

// attempt is the Attempt middleware.
func (t *Telemetry) attempt(next http.RoundTripper) http.RoundTripper {
	return &attemptRT{t: t, next: next}
}

// callRT is the call layer of one pipeline of one client. A registry's
// hooks are the same for every client and the pipeline tells a layer
// nothing of its client, so the layer learns the name once, by a probe:
// resolve sends a marked request through every client of the registered
// registries, and each callRT that sees one keeps its name and answers
// errProbe without calling next. A pipeline belongs to one client for its
// life, so once is enough.
type callRT struct {
	t      *Telemetry
	next   http.RoundTripper
	client atomic.Pointer[string]
	probed atomic.Uint64 // the Telemetry epoch this layer last resolved at, +1
}

// probeKey marks a probe's context; its value is the client's name.
type probeKey struct{}

// callKey carries the *callRT of a call down to its attempts.
type callKey struct{}

// errProbe answers a probe.
var errProbe = errors.New("otelswitchboard: probe")

// clientName returns the client's name, resolving it first if this layer
// has not been probed since the last Register; "" when no registered
// registry serves this pipeline (not registered yet, or retired).
func (c *callRT) clientName() string {
	if p := c.client.Load(); p != nil {
		return *p
	}
	epoch := c.t.epoch.Load() + 1
	if old := c.probed.Load(); old != epoch && c.probed.CompareAndSwap(old, epoch) {
		c.t.resolve(c)
	}
	if p := c.client.Load(); p != nil {
		return *p
	}
	return ""
}

// resolve probes every client of the registered registries, until c
// knows its name. Probes run one round at a time.
func (t *Telemetry) resolve(c *callRT) {
	t.resolving.Lock()
	defer t.resolving.Unlock()
	t.regsMu.Lock()
	regs := append([]*factory.Registry(nil), t.regs...)
	t.regsMu.Unlock()
	for _, reg := range regs {
		for _, cs := range reg.Status().Clients {
			if c.client.Load() != nil {
				return
			}
			name := cs.Name
			ctx := context.WithValue(context.Background(), probeKey{}, name)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://switchboard.probe/", nil)
			if err != nil {
				continue
			}
			if resp, err := reg.Get(name).Transport.RoundTrip(req); err == nil && resp != nil && resp.Body != nil {
				resp.Body.Close() // a layer above ours answered (cannot happen with Instrument's order)
			}
		}
	}
}

// RoundTrip runs one logical call in a span, records its duration, and
// hands the call's layer to the attempts through the context. The caller's
// request is not changed: next gets req.WithContext.
func (c *callRT) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if name, ok := ctx.Value(probeKey{}).(string); ok {
		c.client.CompareAndSwap(nil, &name)
		closeBody(req)
		return nil, errProbe
	}
	t := c.t
	client := c.clientName()
	m := method(req.Method)
	addr, port := t.server(req.URL)
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, CallSpanName, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(common(make([]attribute.KeyValue, 0, 4), client, m, addr, port)...))
	if span.IsRecording() { // a span sampled out costs no URL string
		span.SetAttributes(semconv.URLFull(middleware.RedactURL(req.URL)))
	}
	ctx = context.WithValue(ctx, callKey{}, c)
	resp, err := c.next.RoundTrip(req.WithContext(ctx))
	elapsed := time.Since(start).Seconds()
	attrs := outcome(resp, err, span, req)
	attrs = common(attrs, client, m, addr, port)
	t.callDuration.Record(ctx, elapsed, metric.WithAttributes(attrs...))
	span.End()
	return resp, err
}

// attemptRT is the attempt layer: a client span per attempt, its duration,
// and the trace context in the attempt's headers.
type attemptRT struct {
	t    *Telemetry
	next http.RoundTripper
}

// RoundTrip runs one attempt in a child span of the call's. Retry gives
// every attempt its own clone of the caller's request, so the headers
// this layer sets are the attempt's alone; it still sends next a shallow
// copy with the span's context.
func (a *attemptRT) RoundTrip(req *http.Request) (*http.Response, error) {
	t := a.t
	ctx := req.Context()
	client := ""
	if c, ok := ctx.Value(callKey{}).(*callRT); ok {
		if p := c.client.Load(); p != nil {
			client = *p
		}
	}
	m := method(req.Method)
	addr, port := t.server(req.URL)
	n := middleware.AttemptFrom(ctx)
	startAttrs := common(make([]attribute.KeyValue, 0, 5), client, m, addr, port)
	if n > 1 {
		startAttrs = append(startAttrs, semconv.HTTPRequestResendCount(n-1))
	}
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, m, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(startAttrs...))
	if span.IsRecording() {
		span.SetAttributes(semconv.URLFull(middleware.RedactURL(req.URL)))
	}
	areq := req.WithContext(ctx)
	if areq.Header == nil {
		areq.Header = make(http.Header)
	}
	t.prop.Inject(ctx, propagation.HeaderCarrier(areq.Header))
	resp, err := a.next.RoundTrip(areq)
	elapsed := time.Since(start).Seconds()
	attrs := outcome(resp, err, span, req)
	attrs = common(attrs, client, m, addr, port)
	t.attemptDuration.Record(ctx, elapsed, metric.WithAttributes(attrs...))
	span.End()
	return resp, err
}

// outcome sets span's status and outcome attributes from resp and err, as
// the semantic conventions do for an HTTP client span (a status >= 400 is
// an error; its error.type is the status code), and returns the outcome
// attributes for the duration metric. An error's message is redacted
// first, for req's URL, by middleware.RedactError: the layers below the
// call layer are inside the pipeline's own redaction.
func outcome(resp *http.Response, err error, span trace.Span, req *http.Request) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	switch {
	case err != nil:
		et := semconv.ErrorTypeKey.String(errorType(err))
		attrs = append(attrs, et)
		span.SetAttributes(et)
		span.SetStatus(codes.Error, middleware.RedactError(err, req.URL).Error())
	case resp != nil:
		sc := semconv.HTTPResponseStatusCode(resp.StatusCode)
		attrs = append(attrs, sc)
		span.SetAttributes(sc)
		if resp.StatusCode >= 400 {
			et := semconv.ErrorTypeKey.String(strconv.Itoa(resp.StatusCode))
			attrs = append(attrs, et)
			span.SetAttributes(et)
			span.SetStatus(codes.Error, "")
		}
	}
	return attrs
}

// common appends the attributes that a call's or an attempt's span and
// duration share: the client (when known), method, server address and
// port (when known).
func common(a []attribute.KeyValue, client, method, addr string, port int) []attribute.KeyValue {
	if client != "" {
		a = append(a, attribute.String(attrClient, client))
	}
	a = append(a, semconv.HTTPRequestMethodKey.String(method))
	if addr != "" {
		a = append(a, semconv.ServerAddress(addr))
	}
	if port > 0 {
		a = append(a, semconv.ServerPort(port))
	}
	return a
}
