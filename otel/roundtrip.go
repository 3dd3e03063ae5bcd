package otelswitchboard

import (
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-http/switchboard/middleware"
)

// CallSpanName is the name of the span of a logical call; each attempt's
// span is named after its method, as the semantic conventions ask.
const CallSpanName = "switchboard.call"

// outer returns the Outer middleware of the client called client: one
// callRT per pipeline a registry builds for it.
func (t *Telemetry) outer(client string) middleware.Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &callRT{t: t, client: client, next: next}
	}
}

// attempt returns the Attempt middleware of the client called client.
func (t *Telemetry) attempt(client string) middleware.Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return &attemptRT{t: t, client: client, next: next}
	}
}

// callRT is the call layer of one pipeline of one client, made by
// HooksFor with the client's name ("" reports no switchboard.client).
type callRT struct {
	t      *Telemetry
	client string
	next   http.RoundTripper
}

// RoundTrip runs one logical call in a span and records its duration. The
// caller's request is not changed: next gets req.WithContext.
func (c *callRT) RoundTrip(req *http.Request) (*http.Response, error) {
	t, client := c.t, c.client
	m := method(req.Method)
	addr, port := t.server(req.URL)
	start := time.Now()
	ctx, span := t.tracer.Start(req.Context(), CallSpanName, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(common(make([]attribute.KeyValue, 0, 4), client, m, addr, port)...))
	if span.IsRecording() { // a span sampled out costs no URL string
		span.SetAttributes(semconv.URLFull(middleware.RedactURL(req.URL)))
	}
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
	t      *Telemetry
	client string
	next   http.RoundTripper
}

// RoundTrip runs one attempt in a child span of the call's. Retry gives
// every attempt its own clone of the caller's request, so the headers
// this layer sets are the attempt's alone; it still sends next a shallow
// copy with the span's context.
func (a *attemptRT) RoundTrip(req *http.Request) (*http.Response, error) {
	t, client := a.t, a.client
	ctx := req.Context()
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
