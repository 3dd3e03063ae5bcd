package otelswitchboard

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// The metric names; the package doc's table describes each.
const (
	MetricAttemptDuration = "http.client.request.duration"
	MetricCallDuration    = "switchboard.call.duration"
	MetricEvents          = "switchboard.events"
	MetricReloads         = "switchboard.config.reloads"
	MetricBreakerState    = "switchboard.circuit_breaker.state"
	MetricBulkheadInUse   = "switchboard.bulkhead.in_use"
	MetricBulkheadLimit   = "switchboard.bulkhead.limit"
	MetricBudgetBalance   = "switchboard.retry.budget.balance"
	MetricLimiterTokens   = "switchboard.rate_limit.tokens"
	MetricGeneration      = "switchboard.config.generation"
)

// The attribute keys switchboard adds to the semantic conventions' own.
const (
	attrClient        = "switchboard.client"
	attrGroup         = "switchboard.group"
	attrQuotaScope    = "switchboard.ratelimit.scope"
	attrEventName     = "event.name"
	attrReloadOutcome = "switchboard.reload.outcome"
	attrBreakerHost   = "switchboard.circuit_breaker.host"
	attrBreakerState  = "switchboard.circuit_breaker.state"
)

// attemptBuckets are the semantic conventions' advice for
// http.client.request.duration, in seconds.
var attemptBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// callBuckets add room for retries and their waits to attemptBuckets.
var callBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60}

// instruments makes every instrument of t; it joins the errors of those
// the meter refused (each then a no-op, as the API returns them).
func (t *Telemetry) instruments() error {
	m := t.meter
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	t.attemptDuration, err = m.Float64Histogram(MetricAttemptDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP client requests."),
		metric.WithExplicitBucketBoundaries(attemptBuckets...))
	keep(err)
	t.callDuration, err = m.Float64Histogram(MetricCallDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of logical calls of a switchboard client: every attempt, backoff and wait included."),
		metric.WithExplicitBucketBoundaries(callBuckets...))
	keep(err)
	t.events, err = m.Int64Counter(MetricEvents, metric.WithUnit("{event}"),
		metric.WithDescription("Resilience events of switchboard clients, by stable event name."))
	keep(err)
	t.reloads, err = m.Int64Counter(MetricReloads, metric.WithUnit("{reload}"),
		metric.WithDescription("Configuration reload attempts by outcome: applied, rejected, skipped."))
	keep(err)
	t.breakerState, err = m.Int64ObservableGauge(MetricBreakerState, metric.WithUnit("{state}"),
		metric.WithDescription("1 for the circuit breaker's current state, 0 for the other two."))
	keep(err)
	t.bulkheadInUse, err = m.Int64ObservableGauge(MetricBulkheadInUse, metric.WithUnit("{request}"),
		metric.WithDescription("Bulkhead slots in use."))
	keep(err)
	t.bulkheadLimit, err = m.Int64ObservableGauge(MetricBulkheadLimit, metric.WithUnit("{request}"),
		metric.WithDescription("Bulkhead size: bulkhead.max_concurrent, or the learned limit in mode adaptive."))
	keep(err)
	t.budgetBalance, err = m.Float64ObservableGauge(MetricBudgetBalance, metric.WithUnit("{retry}"),
		metric.WithDescription("Retries the retry budget allows now."))
	keep(err)
	t.limiterTokens, err = m.Float64ObservableGauge(MetricLimiterTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Rate limiter tokens available now."))
	keep(err)
	t.generation, err = m.Int64ObservableGauge(MetricGeneration, metric.WithUnit("{generation}"),
		metric.WithDescription("The configuration generation serving; the first is 1."))
	keep(err)
	return errors.Join(errs...)
}
