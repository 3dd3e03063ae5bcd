package otelswitchboard

import (
	"context"
	"net/http"
	"strconv"
	"sync"
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

// otherMethodSpanName is the name of the span of an attempt whose method
// is not a known one (http.request.method "_OTHER"), as the semantic
// conventions ask; http.request.method_original then holds the method.
const otherMethodSpanName = "HTTP"

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
	var cut *cutAttempts
	if span.IsRecording() { // a span sampled out costs no URL string, and has no attempt spans to keep
		span.SetAttributes(semconv.URLFull(middleware.RedactURL(req.URL)))
		if m == other {
			span.SetAttributes(semconv.HTTPRequestMethodOriginal(req.Method))
		}
		cut = &cutAttempts{}
		ctx = context.WithValue(ctx, cutKey{}, cut)
	}
	resp, err := c.next.RoundTrip(req.WithContext(ctx))
	elapsed := time.Since(start).Seconds()
	attrs := outcome(resp, err, span, req)
	attrs = common(attrs, client, m, addr, port)
	t.callDuration.Record(ctx, elapsed, metric.WithAttributes(attrs...))
	cut.close()
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

// RoundTrip runs one attempt in a child span of the call's. The factory
// clones every attempt of a client with attempt middleware, which this
// layer is, so the headers this layer sets are the attempt's alone; it still sends next a shallow
// copy with the span's context.
func (a *attemptRT) RoundTrip(req *http.Request) (*http.Response, error) {
	t, client := a.t, a.client
	ctx := req.Context()
	m := method(req.Method)
	addr, port := t.server(req.URL)
	n := middleware.AttemptFrom(ctx)
	startAttrs := common(make([]attribute.KeyValue, 0, 6), client, m, addr, port)
	// Every resend counts, a retry's and a redirect's alike: a redirect
	// hop is a new logical call whose request carries the response that
	// caused it. A broken chain counts the hops it shows.
	_, hops, _ := middleware.Redirects(req)
	if resends := hops + n - 1; resends > 0 {
		startAttrs = append(startAttrs, semconv.HTTPRequestResendCount(resends))
	}
	name := m
	if m == other {
		name = otherMethodSpanName
		startAttrs = append(startAttrs, semconv.HTTPRequestMethodOriginal(req.Method))
	}
	start := time.Now()
	sctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(startAttrs...))
	if span.IsRecording() {
		span.SetAttributes(semconv.URLFull(middleware.RedactURL(req.URL)))
	}
	areq := req.WithContext(sctx)
	if areq.Header == nil {
		areq.Header = make(http.Header)
	}
	t.prop.Inject(sctx, propagation.HeaderCarrier(areq.Header))
	resp, err := a.next.RoundTrip(areq)
	elapsed := time.Since(start).Seconds()
	attrs := outcome(resp, err, span, req)
	attrs = common(attrs, client, m, addr, port)
	t.attemptDuration.Record(sctx, elapsed, metric.WithAttributes(attrs...))
	// The AttemptTimeout layer above reports its deadline's firing once
	// this returns: the span stays open for that event (see OnEvent).
	if err != nil && middleware.AttemptTimeoutFired(ctx) && park(ctx, n, span) {
		return resp, err
	}
	span.End()
	return resp, err
}

// cutKey is the context key of a call's *cutAttempts.
type cutKey struct{}

// cutAttempts holds the spans of a call's attempts that the attempt
// timeout cut off, kept open from the moment the attempt returns until the
// AttemptTimeout layer's timeout.exceeded event reaches OnEvent, which
// adds it to the span it belongs to and ends it; the event follows at once
// on the same goroutine. A span whose event never comes (no Observer
// wired) ends with the call, at the time its attempt returned. It is safe
// for concurrent use (hedged copies run at once); nil holds nothing.
type cutAttempts struct {
	mu     sync.Mutex
	spans  map[int]cutSpan // by attempt number
	closed bool            // the call ended: nothing more is kept
}

// cutSpan is an attempt span kept open, with the time its attempt ended.
type cutSpan struct {
	span trace.Span
	end  time.Time
}

// park keeps span, of attempt n cut by its attempt timeout, in the call of
// ctx for the event; false when there is no call to keep it in, and the
// caller ends it.
func park(ctx context.Context, n int, span trace.Span) bool {
	c, _ := ctx.Value(cutKey{}).(*cutAttempts)
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	if c.spans == nil {
		c.spans = make(map[int]cutSpan, 1)
	}
	c.spans[n] = cutSpan{span: span, end: time.Now()}
	return true
}

// take returns the kept span of attempt n of the call of ctx, no longer
// kept, or nil.
func take(ctx context.Context, n int) trace.Span {
	c, _ := ctx.Value(cutKey{}).(*cutAttempts)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.spans[n]
	if !ok {
		return nil
	}
	delete(c.spans, n)
	return s.span
}

// close ends the spans still kept, at the time their attempts returned,
// and keeps none from now on.
func (c *cutAttempts) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	spans := c.spans
	c.spans, c.closed = nil, true
	c.mu.Unlock()
	for _, s := range spans {
		s.span.End(trace.WithTimestamp(s.end))
	}
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
		et := semconv.ErrorTypeKey.String(errorType(req, err))
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
