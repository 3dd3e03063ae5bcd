package promswitchboard

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// Metrics counts what switchboard's clients do as they do it: calls by
// outcome and their duration (switchboard_calls_total,
// switchboard_call_duration_seconds), attempts by outcome
// (switchboard_attempts_total), retries and hedged copies
// (switchboard_retries_total, switchboard_hedges_total: the retry.attempt
// and hedge.sent events), calls that joined a coalesced trip
// (switchboard_coalesced_total: the coalesce.joined events), calls refused locally by reason
// (switchboard_rejections_total) and reload attempts by result
// (switchboard_config_reloads_total: the config.* events). It is a
// prometheus.Collector, a middleware.Observer (OnEvent) and a source of
// per-client middleware (HooksFor); Instrument wires the last two into
// factory.Options. Make it with NewMetrics; the zero value is not usable.
// It is safe for concurrent use.
type Metrics struct {
	calls, attempts, retries, hedges, coalesced, rejections, reloads *prometheus.CounterVec
	duration                                                         *prometheus.HistogramVec
}

// outcomes are every middleware.Outcome, for their label values.
var outcomes = [...]middleware.Outcome{
	middleware.OutcomeSuccess, middleware.OutcomeFailure, middleware.OutcomeRejected,
	middleware.OutcomeCallerGone, middleware.OutcomePermanent,
}

// reasons names each local rejection's sentinel (middleware.Rejection) in
// the reason label; a sentinel missing here counts as "other".
var reasons = map[error]string{
	middleware.ErrCircuitOpen:  "circuit_open",
	middleware.ErrBulkheadFull: "bulkhead_full",
	middleware.ErrRateLimited:  "rate_limited",
}

// NewMetrics returns the counters and the histogram, with no series yet:
// a client's appear with its pipeline's first build (HooksFor), at zero.
func NewMetrics(o Options) *Metrics {
	buckets := o.Buckets
	if buckets == nil {
		buckets = defaultBuckets()
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	return &Metrics{
		calls: counter("switchboard_calls_total",
			"Logical calls of a client, by outcome (middleware.Classify), counted when they return to the caller.", "client", "outcome"),
		attempts: counter("switchboard_attempts_total",
			"Attempts (first tries, retries and hedged copies) of a client, by outcome.", "client", "outcome"),
		retries: counter("switchboard_retries_total",
			"Retries a client scheduled (retry.attempt events).", "client"),
		hedges: counter("switchboard_hedges_total",
			"Extra hedged copies a client sent (hedge.sent events).", "client"),
		coalesced: counter("switchboard_coalesced_total",
			"Logical calls of a client that joined a coalesced trip under way, counted as they join (coalesce.joined events): one that leaves, or sends its own request for an answer over max_body, counts too.", "client"),
		rejections: counter("switchboard_rejections_total",
			"Logical calls refused in this process before the backend saw them, by reason: circuit_open, bulkhead_full, rate_limited.", "client", "reason"),
		reloads: counter("switchboard_config_reloads_total",
			"Reload attempts by result: applied, rejected, skipped (inputs unchanged).", "result"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchboard_call_duration_seconds",
			Help:    "Duration of a client's logical calls, attempts, backoff and waits included, by outcome.",
			Buckets: buckets,
		}, []string{"client", "outcome"}),
	}
}

// Describe sends the descriptors of every metric.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect sends every series.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.calls, m.duration, m.attempts, m.retries, m.hedges, m.coalesced, m.rejections, m.reloads}
}

// Instrument wires m into o before factory.Open or factory.New: o.Observer
// becomes m (followed by the Observer o had, if any), and o.HooksFor gives
// each client m's Outer and Attempt middleware (see HooksFor) outside the
// hooks of the HooksFor o had, if any, and of o.Hooks, whose Outer and
// Attempt middleware move into HooksFor just inside m's: m sees each call
// as the caller does. Other fields of o.Hooks stay where they are.
func (m *Metrics) Instrument(o *factory.Options) { factory.Instrument(o, m, m.HooksFor) }

// startKey is the context key under which Outer leaves, on the Request of
// a redirect response http.Client will follow, when the call began.
type startKey struct{}

// callStart returns when req's logical call began: now, unless req is a
// redirect hop whose previous hop left its start (startKey).
func callStart(req *http.Request) time.Time {
	if req.Response != nil && req.Response.Request != nil {
		if t, ok := req.Response.Request.Context().Value(startKey{}).(time.Time); ok {
			return t
		}
	}
	return time.Now()
}

// HooksFor returns m's middleware for the pipelines of the client called
// name: Outer counts each logical call by outcome, with its duration, and
// its local rejection by reason; Attempt counts each attempt by outcome.
// A redirected call counts once, at the hop that ends it, with the
// duration of all its hops: a hop http.Client will follow
// (middleware.WillBeFollowed) is not counted. A chain the client's
// CheckRedirect stops (transport.max_redirects) ends at a hop Outer cannot
// tell from a followed one: that call is not counted here, though Status
// counts it.
// Every series of the client is made here, at zero, so a client shows
// from its first build on. Its signature is factory.Options.HooksFor's,
// for wiring by hand (Instrument does it).
func (m *Metrics) HooksFor(name string) factory.Hooks {
	cl := &clientSeries{}
	for _, o := range outcomes {
		cl.calls[o] = m.calls.WithLabelValues(name, o.String())
		cl.attempts[o] = m.attempts.WithLabelValues(name, o.String())
		cl.duration[o] = m.duration.WithLabelValues(name, o.String())
	}
	cl.rejections = make(map[error]prometheus.Counter, len(reasons))
	for sentinel, reason := range reasons {
		cl.rejections[sentinel] = m.rejections.WithLabelValues(name, reason)
	}
	m.retries.WithLabelValues(name)
	m.hedges.WithLabelValues(name)
	m.coalesced.WithLabelValues(name)
	return factory.Hooks{
		Outer: []middleware.Middleware{func(next http.RoundTripper) http.RoundTripper {
			return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				start := callStart(req)
				resp, err := next.RoundTrip(req)
				if middleware.WillBeFollowed(req, resp, err) && resp.Request != nil {
					// Not the call's end: its next hop counts it, from
					// this start.
					resp.Request = resp.Request.WithContext(context.WithValue(resp.Request.Context(), startKey{}, start))
					return resp, err
				}
				o := middleware.Classify(req, resp, err)
				cl.calls[o].Inc()
				cl.duration[o].Observe(time.Since(start).Seconds())
				if o == middleware.OutcomeRejected {
					if c, ok := cl.rejections[middleware.Rejection(err)]; ok {
						c.Inc()
					} else { // a refusal newer than this table
						m.rejections.WithLabelValues(name, "other").Inc()
					}
				}
				return resp, err
			})
		}},
		Attempt: []middleware.Middleware{func(next http.RoundTripper) http.RoundTripper {
			return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := next.RoundTrip(req)
				cl.attempts[middleware.Classify(req, resp, err)].Inc()
				return resp, err
			})
		}},
	}
}

// clientSeries are one client's series, looked up once per pipeline
// build rather than at every call.
type clientSeries struct {
	calls, attempts [len(outcomes)]prometheus.Counter
	duration        [len(outcomes)]prometheus.Observer
	rejections      map[error]prometheus.Counter
}

// OnEvent counts the events behind switchboard_retries_total,
// switchboard_hedges_total, switchboard_coalesced_total and
// switchboard_config_reloads_total; it makes
// m a middleware.Observer.
func (m *Metrics) OnEvent(_ context.Context, e middleware.Event) {
	switch e.Name {
	case middleware.EventRetryAttempt:
		m.retries.WithLabelValues(e.Client).Inc()
	case middleware.EventHedgeSent:
		m.hedges.WithLabelValues(e.Client).Inc()
	case middleware.EventCoalesceJoined:
		m.coalesced.WithLabelValues(e.Client).Inc()
	case middleware.EventConfigReloaded:
		m.reloads.WithLabelValues("applied").Inc()
	case middleware.EventConfigRejected:
		m.reloads.WithLabelValues("rejected").Inc()
	case middleware.EventConfigUnchanged:
		m.reloads.WithLabelValues("skipped").Inc()
	}
}
