package otelswitchboard

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// ScopeName is the instrumentation scope of every meter and tracer the
// adapter creates.
const ScopeName = "github.com/switchboard-http/switchboard/otel"

// DefaultMaxHosts is how many distinct server.address values (and breaker
// hosts of scope host, per client) a Telemetry reports when
// Options.MaxHosts is 0. Hosts seen after that are reported as "_OTHER".
const DefaultMaxHosts = 100

// Options configures New. The zero value uses OpenTelemetry's globals.
type Options struct {
	// MeterProvider makes the meter of every instrument; nil means
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider makes the tracer of the call and attempt spans; nil
	// means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// Propagator injects the trace context into every attempt's headers;
	// nil means otel.GetTextMapPropagator() (W3C traceparent once the
	// application sets propagation.TraceContext{} there, as most do).
	Propagator propagation.TextMapPropagator
	// MaxHosts caps the distinct hosts reported in attributes; 0 means
	// DefaultMaxHosts. A negative value reports every host as "_OTHER".
	MaxHosts int
}

// Telemetry is the adapter: an Observer for the resilience events, the
// Outer and Attempt middleware for spans, durations and propagation, and
// the gauges that Register reads from a registry's Status. Make one with
// New, hand it to factory.Options with Instrument, and Register the
// registry once it is open. It is safe for concurrent use.
type Telemetry struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	meter  metric.Meter
	hosts  hostSet

	attemptDuration metric.Float64Histogram
	callDuration    metric.Float64Histogram
	events          metric.Int64Counter
	reloads         metric.Int64Counter

	breakerState  metric.Int64ObservableGauge
	bulkheadInUse metric.Int64ObservableGauge
	bulkheadLimit metric.Int64ObservableGauge
	budgetBalance metric.Float64ObservableGauge
	limiterTokens metric.Float64ObservableGauge
	generation    metric.Int64ObservableGauge

	// regs are the registered registries, through which a call layer that
	// does not yet know its client's name finds it (see callRT.clientName).
	regsMu sync.Mutex
	regs   []*factory.Registry
	epoch  atomic.Uint64 // bumped by every Register and unregister
	// resolving serialises resolve, so that a reload's new pipelines are
	// named by one round of probes, not one per pipeline.
	resolving sync.Mutex
}

// New returns a Telemetry whose instruments are made from o's providers.
// It fails only if the MeterProvider refuses an instrument.
func New(o Options) (*Telemetry, error) {
	mp, tp, prop := o.MeterProvider, o.TracerProvider, o.Propagator
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if prop == nil {
		prop = otel.GetTextMapPropagator()
	}
	max := o.MaxHosts
	if max == 0 {
		max = DefaultMaxHosts
	}
	t := &Telemetry{
		tracer: tp.Tracer(ScopeName),
		prop:   prop,
		meter:  mp.Meter(ScopeName),
		hosts:  hostSet{max: max},
	}
	if err := t.instruments(); err != nil {
		return nil, err
	}
	return t, nil
}

// Instrument wires t into o: o.Observer becomes t (followed by the
// Observer o already had, if any), and t's Outer and Attempt middleware
// go first in o.Hooks, so that the call span covers every other code
// layer and the attempt span every attempt layer. Call it before
// factory.Open or factory.New, then Register the registry.
func (t *Telemetry) Instrument(o *factory.Options) {
	if prev := o.Observer; prev != nil {
		o.Observer = middleware.ObserverFunc(func(ctx context.Context, e middleware.Event) {
			t.OnEvent(ctx, e)
			prev.OnEvent(ctx, e)
		})
	} else {
		o.Observer = t
	}
	h := t.Hooks()
	o.Hooks.Outer = append(h.Outer, o.Hooks.Outer...)
	o.Hooks.Attempt = append(h.Attempt, o.Hooks.Attempt...)
}

// Hooks returns t's middleware for factory.Options.Hooks: Outer (the call
// span and switchboard.call.duration) and Attempt (the attempt span,
// http.client.request.duration and trace context propagation). Put them
// first; Instrument does.
func (t *Telemetry) Hooks() factory.Hooks {
	return factory.Hooks{
		Outer:   []middleware.Middleware{t.outer},
		Attempt: []middleware.Middleware{t.attempt},
	}
}

// OnEvent counts e in switchboard.events (and reloads in
// switchboard.config.reloads) and adds it as a span event, with the
// attributes of its slog record, to the span of ctx: the attempt's for
// events of the layers inside Retry, the call's for the others. e comes
// from middleware.Events.Emit, already redacted. OnEvent makes t a
// middleware.Observer.
func (t *Telemetry) OnEvent(ctx context.Context, e middleware.Event) {
	if e.Client != "" {
		t.events.Add(ctx, 1, metric.WithAttributes(attribute.String(attrEventName, e.Name), attribute.String(attrClient, e.Client)))
	} else {
		t.events.Add(ctx, 1, metric.WithAttributes(attribute.String(attrEventName, e.Name)))
	}
	if outcome := reloadOutcome(e.Name); outcome != "" {
		t.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String(attrReloadOutcome, outcome)))
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(e.Name, trace.WithAttributes(eventAttributes(e)...))
	}
}

// reloadOutcome maps a reload's event to its outcome; "" for other events.
func reloadOutcome(name string) string {
	switch name {
	case middleware.EventConfigReloaded:
		return "applied"
	case middleware.EventConfigRejected:
		return "rejected"
	case middleware.EventConfigUnchanged:
		return "skipped"
	}
	return ""
}

// eventAttributes are the attributes of e's slog record (see
// middleware.Events.Emit), under the same keys.
func eventAttributes(e middleware.Event) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 10)
	a = append(a, attribute.String("event", e.Name), attribute.String("client", e.Client))
	if e.Method != "" {
		a = append(a, attribute.String("method", e.Method))
	}
	if e.URL != "" {
		a = append(a, attribute.String("url", e.URL))
	}
	if e.Host != "" {
		a = append(a, attribute.String("host", e.Host))
	}
	if e.Attempt > 0 {
		a = append(a, attribute.Int("attempt", e.Attempt))
	}
	if e.Status > 0 {
		a = append(a, attribute.Int("status", e.Status))
	}
	if e.Delay > 0 {
		a = append(a, attribute.String("delay", e.Delay.String()))
	}
	if e.Err != nil {
		a = append(a, attribute.String("error", e.Err.Error()))
	}
	if e.Reason != "" {
		a = append(a, attribute.String("reason", e.Reason))
	}
	return a
}

// closeBody closes req's body, as a RoundTripper that sends nothing must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
