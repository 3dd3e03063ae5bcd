package promswitchboard

import (
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// DefaultMaxHosts is how many breaker hosts per client the collector
// reports when Options.MaxHosts is 0.
const DefaultMaxHosts = 100

// Options tunes both collectors. The zero value is ready: DefaultMaxHosts
// hosts, the default buckets. A plain value.
type Options struct {
	// MaxHosts bounds the hosts the breaker gauges report per client of
	// scope host: the first MaxHosts in sorted order. 0 means
	// DefaultMaxHosts; a negative value reports none.
	MaxHosts int
	// Buckets are the upper bounds, in seconds, of
	// switchboard_call_duration_seconds; nil means 0.005, 0.01, 0.025,
	// 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 and 60: from 5ms to a
	// minute, as a call with retries and backoff can last.
	Buckets []float64
}

// defaultBuckets returns the bounds nil Options.Buckets means.
func defaultBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
}

// breakerStates are the values of the state label, as
// middleware.BreakerState spells them.
var breakerStates = [...]string{
	middleware.BreakerClosed.String(), middleware.BreakerHalfOpen.String(), middleware.BreakerOpen.String(),
}

// collector is NewCollector's prometheus.Collector.
type collector struct {
	reg      *factory.Registry
	maxHosts int

	generation, reloadOK, reloadTime             *prometheus.Desc
	breakerState, breakerRejectP                 *prometheus.Desc
	bulkheadInUse, bulkheadLimit, tokens, budget *prometheus.Desc
	sourceStale                                  *prometheus.Desc
}

// NewCollector returns a prometheus.Collector of reg's gauges, read from
// one reg.Status() snapshot at every scrape (so a breaker that never
// changed state is reported closed from the first): the breaker state per
// client and host, the adaptive breaker's rejection probability, the
// bulkhead's slots in use and limit, the rate limit's tokens, the retry
// budget's balance, the config generation, whether the last reload
// applied and when the serving one did, and each Source's staleness. A
// client's gauge is reported only while the component is on (the bulkhead
// gauges while bulkhead.max_concurrent > 0 or bulkhead.mode is adaptive,
// whose limit gauge is the learned limit; the budget's while its ttl >
// 0). Register it once per registry; after reg.Close it reports the last
// state. It is safe for concurrent use.
func NewCollector(reg *factory.Registry, o Options) prometheus.Collector {
	client := []string{"client"}
	c := &collector{
		reg:      reg,
		maxHosts: o.MaxHosts,
		generation: prometheus.NewDesc("switchboard_config_generation",
			"Config generation serving now; each applied reload adds one, the first load is 1.", nil, nil),
		reloadOK: prometheus.NewDesc("switchboard_config_last_reload_successful",
			"Whether the last reload attempt applied (1) or was rejected (0; the generation before it keeps serving).", nil, nil),
		reloadTime: prometheus.NewDesc("switchboard_config_last_reload_success_timestamp_seconds",
			"When the serving config generation was applied, in seconds since the Unix epoch.", nil, nil),
		breakerState: prometheus.NewDesc("switchboard_breaker_state",
			"Circuit breaker state: 1 for the current state (closed, half_open, open), 0 for the others; host is set for scope host.",
			[]string{"client", "host", "state"}, nil),
		breakerRejectP: prometheus.NewDesc("switchboard_breaker_reject_probability",
			"Probability that an adaptive breaker rejects the next call locally (client-side throttling).",
			[]string{"client", "host"}, nil),
		bulkheadInUse: prometheus.NewDesc("switchboard_bulkhead_in_use",
			"Bulkhead slots in use (logical calls in flight).", client, nil),
		bulkheadLimit: prometheus.NewDesc("switchboard_bulkhead_limit",
			"Bulkhead size: bulkhead.max_concurrent, or the learned limit in mode adaptive.", client, nil),
		tokens: prometheus.NewDesc("switchboard_rate_limit_tokens",
			"Rate-limit tokens available now.", client, nil),
		budget: prometheus.NewDesc("switchboard_retry_budget_balance",
			"Retries the retry budget allows now; below 1 retries are refused.", client, nil),
		sourceStale: prometheus.NewDesc("switchboard_source_stale",
			"Whether a config Source's last read failed and its last good snapshot serves (1) or not (0).",
			[]string{"source"}, nil),
	}
	if c.maxHosts == 0 {
		c.maxHosts = DefaultMaxHosts
	}
	return c
}

// Describe sends every descriptor of the collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.generation, c.reloadOK, c.reloadTime, c.breakerState, c.breakerRejectP,
		c.bulkheadInUse, c.bulkheadLimit, c.tokens, c.budget, c.sourceStale} {
		ch <- d
	}
}

// Collect reports one Status snapshot.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.reg.Status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.generation, float64(s.Generation))
	gauge(c.reloadOK, boolValue(s.LastError == nil))
	if !s.LastReload.IsZero() {
		gauge(c.reloadTime, float64(s.LastReload.UnixNano())/1e9)
	}
	for _, src := range s.Sources {
		gauge(c.sourceStale, boolValue(src.Stale), src.Name)
	}
	for _, cs := range s.Clients {
		for _, host := range c.hosts(cs.Breaker) {
			for _, st := range breakerStates {
				gauge(c.breakerState, boolValue(cs.Breaker[host] == st), cs.Name, host, st)
			}
			if p, ok := cs.BreakerRejectProbability[host]; ok && finite(p) {
				gauge(c.breakerRejectP, p, cs.Name, host)
			}
		}
		if cs.BulkheadLimit > 0 {
			gauge(c.bulkheadInUse, float64(cs.BulkheadInUse), cs.Name)
			gauge(c.bulkheadLimit, float64(cs.BulkheadLimit), cs.Name)
		}
		if cs.LimiterTokens != nil {
			gauge(c.tokens, *cs.LimiterTokens, cs.Name)
		}
		if finite(cs.BudgetBalance) {
			gauge(c.budget, cs.BudgetBalance, cs.Name)
		}
	}
}

// hosts returns the keys of a client's breaker map to report: "" alone for
// scope client, else the first maxHosts hosts in sorted order, so that the
// same ones are reported at every scrape.
func (c *collector) hosts(breaker map[string]string) []string {
	hosts := make([]string, 0, len(breaker))
	for h := range breaker {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	if len(hosts) > 0 && hosts[0] != "" { // scope host
		hosts = hosts[:min(len(hosts), max(c.maxHosts, 0))]
	}
	return hosts
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func finite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }
