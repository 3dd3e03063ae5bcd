// Package promswitchboard reports switchboard's clients to Prometheus with
// github.com/prometheus/client_golang alone: no OpenTelemetry SDK, no
// exporter. Two collectors, both prometheus.Collectors:
//
//   - NewCollector(reg, opts) reads reg.Status() at every scrape: the
//     gauges (breaker state per client and host, bulkhead in use and
//     limit, rate-limit tokens, retry budget balance, config generation,
//     the last successful reload's time, Sources' staleness).
//   - NewMetrics(opts) counts as calls happen: calls by outcome and their
//     duration, attempts, retries, hedges, coalesced calls, rejections
//     by reason, reloads by result. It is a middleware.Observer and gives each client an
//     Outer and an Attempt middleware (HooksFor); Instrument wires both
//     into factory.Options before Open.
//
// Wiring:
//
//	m := promswitchboard.NewMetrics(promswitchboard.Options{})
//	opts := factory.Options{File: "clients.yaml"}
//	m.Instrument(&opts)
//	reg, err := factory.Open(ctx, opts)
//	prometheus.MustRegister(m, promswitchboard.NewCollector(reg, promswitchboard.Options{}))
//	http.Handle("/metrics", promhttp.Handler())
//
// # Metrics
//
//	name                                                        type       labels
//	switchboard_calls_total                                     counter    client, outcome
//	switchboard_call_duration_seconds                           histogram  client, outcome
//	switchboard_attempts_total                                  counter    client, outcome
//	switchboard_retries_total                                   counter    client
//	switchboard_hedges_total                                    counter    client
//	switchboard_coalesced_total                                 counter    client
//	switchboard_rejections_total                                counter    client, reason
//	switchboard_config_reloads_total                            counter    result
//	switchboard_breaker_state                                   gauge      client, host, state
//	switchboard_breaker_reject_probability                      gauge      client, host
//	switchboard_bulkhead_in_use, switchboard_bulkhead_limit     gauge      client
//	switchboard_rate_limit_tokens                               gauge      client
//	switchboard_retry_budget_balance                            gauge      client
//	switchboard_config_generation                               gauge      —
//	switchboard_config_last_reload_successful                   gauge      —
//	switchboard_config_last_reload_success_timestamp_seconds    gauge      —
//	switchboard_source_stale                                    gauge      source
//
// outcome is middleware.Outcome's spelling (success, failure, rejected,
// caller_gone, permanent: middleware.Classify, the one classification of
// outcomes); reason is circuit_open, bulkhead_full or rate_limited; result
// is applied, rejected or skipped; state is closed, half_open or open (1
// for the current one, 0 for the other two).
//
// Cardinality is bounded: no label holds a URL, a path or a query. client
// takes the names of the config's clients and of those code asked for
// with Get; host takes the hosts a breaker of scope host tracks, which the
// breaker bounds (middleware.DefaultBreakerMaxHosts), and at most
// Options.MaxHosts of them per client (the first in sorted order, so the
// same ones at every scrape); the other labels take the fixed sets above.
//
// Use this package or the otel module's metrics through the OpenTelemetry
// Prometheus exporter, not both in one process: a few names are the same
// (switchboard_config_generation, switchboard_bulkhead_in_use,
// switchboard_call_duration_seconds, …) with other labels (client here,
// switchboard_client there), and one registry cannot hold both.
package promswitchboard
