package otelswitchboard

import (
	"context"
	"log/slog"

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
// Outer and Attempt middleware of each client for spans, durations and
// propagation, and the gauges that Register reads from a registry's
// Status. Make one with New, hand it to factory.Options with Instrument,
// and Register the registry once it is open, for the gauges. It is safe
// for concurrent use.
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
// Observer o already had, if any), and o.HooksFor gives each client t's
// Outer and Attempt middleware bound to its name (see HooksFor), followed
// by the hooks of the HooksFor o already had, if any. Call it before
// factory.Open or factory.New.
//
// The factory applies HooksFor inside Options.Hooks, so Instrument moves
// the Outer and Attempt middleware that o.Hooks has then into o.HooksFor,
// just inside t's: the call span covers every other code layer and the
// attempt span every attempt layer, and the middleware keep their order.
// The other fields of o.Hooks stay where they are. Middleware added to
// o.Hooks after Instrument run outside t's spans.
func (t *Telemetry) Instrument(o *factory.Options) { factory.Instrument(o, t, t.HooksFor) }

// HooksFor returns t's middleware for the pipelines of the client called
// name: Outer (the call span and switchboard.call.duration) and Attempt
// (the attempt span, http.client.request.duration and trace context
// propagation), each reporting switchboard.client=name from the first
// call. Its signature is factory.Options.HooksFor's, for wiring by hand:
// o.HooksFor = t.HooksFor, or o.ClientHooks[name] = t.HooksFor(name) for
// some clients only (then inside o.Hooks' middleware); name "" reports no
// switchboard.client. Instrument does the wiring and keeps t's layers
// outermost.
func (t *Telemetry) HooksFor(name string) factory.Hooks {
	return factory.Hooks{
		Outer:   []middleware.Middleware{t.outer(name)},
		Attempt: []middleware.Middleware{t.attempt(name)},
	}
}

// OnEvent counts e in switchboard.events (and reloads in
// switchboard.config.reloads) and adds it as a span event, with the
// attributes of its slog record, to the span of ctx: the attempt's for
// events of the layers inside Retry (timeout.exceeded of an attempt cut by
// attempt_timeout included: it goes on the span of the attempt it cut,
// which the attempt layer keeps open for it), the call's for the others. e comes
// from middleware.Events.Emit, already redacted. OnEvent makes t a
// middleware.Observer.
func (t *Telemetry) OnEvent(ctx context.Context, e middleware.Event) {
	attrs := make([]attribute.KeyValue, 1, 4)
	attrs[0] = attribute.String(attrEventName, e.Name)
	if e.Client != "" {
		attrs = append(attrs, attribute.String(attrClient, e.Client))
	}
	if e.Group != "" { // a component shared by a group: bounded by the config
		attrs = append(attrs, attribute.String(attrGroup, e.Group))
	}
	if e.Scope != "" { // a rate-limit event's quota scope: process or fleet
		attrs = append(attrs, attribute.String(attrQuotaScope, e.Scope))
	}
	t.events.Add(ctx, 1, metric.WithAttributes(attrs...))
	if outcome := reloadOutcome(e.Name); outcome != "" {
		t.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String(attrReloadOutcome, outcome)))
	}
	// The attempt timeout's event comes from the layer above the attempt
	// span, once the attempt returned: it goes on the span of the attempt
	// it cut (kept open for it), as the events of every layer inside Retry.
	if e.Name == middleware.EventTimeoutExceeded && e.Attempt > 0 {
		if span := take(ctx, e.Attempt); span != nil {
			span.AddEvent(e.Name, trace.WithAttributes(eventAttributes(e)...))
			span.End()
			return
		}
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

// eventAttributes returns e's slog attributes (middleware.Event.Attrs, the
// one mapping of an event to attributes) as span event attributes:
// integers stay integers, the rest is text (a delay as "1.5s").
func eventAttributes(e middleware.Event) []attribute.KeyValue {
	attrs := e.Attrs()
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		if a.Value.Kind() == slog.KindInt64 {
			out = append(out, attribute.Int64(a.Key, a.Value.Int64()))
			continue
		}
		out = append(out, attribute.String(a.Key, a.Value.String()))
	}
	return out
}
