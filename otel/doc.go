// Package otelswitchboard reports switchboard's clients to OpenTelemetry:
// metrics of every attempt and logical call, a span per call and per
// attempt, the W3C trace context in every attempt's headers, and every
// resilience event as a counter and as a span event.
//
// The package lives in the nested module
// github.com/switchboard-http/switchboard/otel, so that the main module
// gains no OpenTelemetry dependency. Its directory is otel, but its name is
// otelswitchboard: a package named otel would shadow
// go.opentelemetry.io/otel in every file that needs both, and the name
// follows the contrib convention (otelhttp, otelgrpc) of naming the
// instrumented library after the prefix.
//
// # Wiring
//
// One Telemetry per process, made from a MeterProvider, a TracerProvider
// and a propagator (the globals when nil):
//
//	tel, err := otelswitchboard.New(otelswitchboard.Options{})
//	opts := factory.Options{File: "clients.yaml"}
//	tel.Instrument(&opts)                    // Observer and HooksFor (Outer, Attempt)
//	reg, err := factory.Open(ctx, opts)
//	unregister, err := tel.Register(reg)     // the gauges
//	defer reg.Close()
//	defer unregister()
//
// Instrument sets Options.Observer (keeping one already set) and
// Options.HooksFor (chaining one already set): the factory calls it each
// time it builds a client's pipeline, so the adapter's Outer and Attempt
// middleware are made for that client and report switchboard.client from
// its very first call, with or without Register, and a pipeline rebuilt
// by a reload is named as the old one was. Instrument keeps the adapter's
// layers outermost: the Outer and Attempt middleware of Options.Hooks move
// into HooksFor, just inside the adapter's. Register is for the gauges
// alone. To wire by hand, set Options.Observer to the Telemetry and
// Options.HooksFor to its HooksFor method.
//
// # Metrics
//
// Every instrument is made by the meter named ScopeName.
//
//	name                               instrument          unit         attributes                                  when
//	http.client.request.duration       Float64Histogram    s            switchboard.client, http.request.method,   each attempt, when its RoundTrip returns
//	                                                                    server.address, server.port,               (response headers or error); the stable
//	                                                                    http.response.status_code, error.type      HTTP semantic conventions' buckets
//	switchboard.call.duration          Float64Histogram    s            as http.client.request.duration            each logical call: what the caller waited,
//	                                                                                                               attempts, backoff and waits included
//	switchboard.events                 Int64Counter        {event}      event.name, switchboard.client             each resilience event (middleware.Event*:
//	                                                                    (none for config.* events),                retry.attempt, circuit.opened, …)
//	                                                                    switchboard.group (a shared component's),
//	                                                                    switchboard.ratelimit.scope (ratelimit.*:
//	                                                                    process | fleet)
//	switchboard.config.reloads         Int64Counter        {reload}     switchboard.reload.outcome:                each reload attempt: config.reloaded,
//	                                                                    applied | rejected | skipped               config.rejected, config.unchanged
//	switchboard.circuit_breaker.state  Int64ObservableGauge {state}       switchboard.client,                        every collection, from the first, per
//	                                                                    switchboard.circuit_breaker.host (scope    breaker: 1 for the current state, 0 for
//	                                                                    host only), switchboard.circuit_breaker.   the other two
//	                                                                    state: closed | half_open | open
//	switchboard.bulkhead.in_use        Int64ObservableGauge {request}   switchboard.client                         every collection; clients with a bulkhead
//	switchboard.bulkhead.limit         Int64ObservableGauge {request}   switchboard.client                         every collection; clients with a bulkhead
//	                                                                                                               (mode adaptive: the learned limit)
//	switchboard.retry.budget.balance   Float64ObservableGauge {retry}   switchboard.client                         every collection; clients whose budget is
//	                                                                                                               on (retry.budget.ttl > 0)
//	switchboard.rate_limit.tokens      Float64ObservableGauge {token}   switchboard.client                         every collection; clients with a limit
//	switchboard.config.generation      Int64ObservableGauge {generation} (none)                                    every collection
//
// http.response.status_code is set when a response came back, error.type
// when an error did or the status is >= 400 (then it is the status code,
// as the conventions ask). error.type names switchboard's outcomes
// briefly: circuit_open, bulkhead_full, rate_limited, timeout (the total
// timeout or a deadline), attempt_timeout, canceled, registry_closed; any
// other error is its Go type (semconv.ErrorType), e.g. *net.OpError.
//
// Cardinality is bounded: no attribute holds a URL path or query; a
// method outside RFC 9110's (and QUERY) is "_OTHER"; server.address holds
// the first MaxHosts (DefaultMaxHosts, 100) distinct host names seen and
// "_OTHER" for every later one; the breaker gauge reports at most MaxHosts
// hosts per client (sorted, so the same ones each time), and the breaker
// itself bounds the hosts it tracks. A reload skipped because its inputs
// were unchanged is counted when the registry emits config.unchanged.
//
// # Traces
//
// Each logical call gets a span named CallSpanName ("switchboard.call",
// kind internal) with switchboard.client, http.request.method,
// server.address, server.port, url.full (redacted by
// middleware.RedactURL), and http.response.status_code or error.type when
// it ends. Each attempt gets a child span named after its method (kind
// client, as the HTTP conventions ask) with the same attributes and
// http.request.resend_count from the second attempt on. A status >= 400
// or an error makes a span's status Error; an error's description is its
// message redacted by middleware.RedactError.
//
// Each attempt's request carries the trace context of its span, injected
// by the propagator (traceparent with propagation.TraceContext). The
// attempt layer is attempt middleware, and the factory gives every attempt
// of a client with attempt middleware its own Request.Clone: the caller's
// request never changes.
//
// Each resilience event becomes a span event, named after the event, on
// the span of the event's context: the attempt's for events of the layers
// inside Retry (ratelimit.waited, fault.injected, and timeout.exceeded of
// an attempt cut by attempt_timeout, whose span stays open for it until
// the AttemptTimeout layer above reports it), the call's for the others
// (retry.attempt, circuit.rejected, bulkhead.rejected, timeout.exceeded of
// the total timeout, …); an attempt_timeout that fires while the body is
// read, after the attempt span ended, goes on the call's span. Its
// attributes are those of the event's slog record, under the same keys
// (event, client, method, url, host, attempt, status, delay, error,
// reason), taken from the middleware.Event that Events.Emit hands the
// Observer, which is redacted already: no secret of a URL reaches a span.
//
// # Cost
//
// The adapter starts no goroutine per request. Per call it allocates the
// call span, its context, a shallow copy of the request, its attribute
// lists and (when the span is sampled) a context value that keeps the
// spans of attempts cut by attempt_timeout for their event; per attempt the same for the attempt span; see BenchmarkRequest
// for the numbers.
package otelswitchboard
