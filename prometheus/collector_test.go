package promswitchboard_test

import (
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
	promswitchboard "github.com/switchboard-http/switchboard/prometheus"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// byHost answers 500 to billing.test, 503 then 200 to search.test (one
// retry), and 500 to every other host.
var byHost = middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	status := http.StatusInternalServerError
	if req.URL.Host == "search.test" {
		status = http.StatusOK
		if req.Header.Get("X-Attempt") == "1" {
			status = http.StatusServiceUnavailable
		}
	}
	return &http.Response{StatusCode: status, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
})

// twoClients is the scraped registry's config: billing, whose breaker
// opens at the first failure, and search, with a bulkhead, a rate limit
// and one quick retry.
func twoClients() config.Config {
	billing := config.Default()
	billing.Retry.MaxRetries = 0
	billing.CircuitBreaker.Enabled, billing.CircuitBreaker.FailureThreshold, billing.CircuitBreaker.Cooldown = true, 1, time.Hour
	search := config.Default()
	search.Retry.MaxRetries, search.Retry.InitialBackoff, search.Retry.AttemptHeader = 1, time.Millisecond, "X-Attempt"
	search.Bulkhead.MaxConcurrent = 4
	search.RateLimit.RequestsPerSecond, search.RateLimit.Burst = 100, 10
	return config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": billing, "search": search}}
}

func call(t *testing.T, r *factory.Registry, client, url string) {
	t.Helper()
	resp, err := r.Get(client).Get(url)
	if err == nil {
		resp.Body.Close()
	}
}

// scrape GETs /metrics from a promhttp handler of preg over a real socket
// and parses the text format.
func scrape(t *testing.T, preg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(preg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: got %d, want 200", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return fams
}

// value returns the value of the series of family name whose labels are
// exactly labels, and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
			delete(got, k)
		}
		if len(got) != 0 {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestScrapeOfTwoClientsOneOpenBreakerOneRejectedReload(t *testing.T) {
	m := promswitchboard.NewMetrics(promswitchboard.Options{})
	opts := factory.Options{Base: byHost, Logger: slog.New(slog.DiscardHandler)}
	m.Instrument(&opts)
	r, err := factory.New(twoClients(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	preg := prometheus.NewPedanticRegistry()
	preg.MustRegister(m, promswitchboard.NewCollector(r, promswitchboard.Options{}))

	call(t, r, "billing", "http://billing.test/v1/invoices?token=abc") // 500: the breaker opens
	call(t, r, "billing", "http://billing.test/v1/invoices")           // rejected
	call(t, r, "search", "http://search.test/q")                       // 503, retried, 200
	applied := twoClients()
	applied.Clients["search"] = func(c config.ClientConfig) config.ClientConfig { c.Timeout = 9 * time.Second; return c }(applied.Clients["search"])
	if err := r.Apply(applied); err != nil {
		t.Fatal(err)
	}
	bad := twoClients()
	bad.Defaults.Retry.MaxRetries = -1
	if err := r.Apply(bad); err == nil {
		t.Fatal("the bad config applied")
	}
	st := r.Status()

	fams := scrape(t, preg)
	billing, search := map[string]string{"client": "billing"}, map[string]string{"client": "search"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"switchboard_config_generation", nil, 2},
		{"switchboard_config_last_reload_successful", nil, 0},
		{"switchboard_config_last_reload_success_timestamp_seconds", nil, float64(st.LastReload.UnixNano()) / 1e9},
		{"switchboard_config_reloads_total", map[string]string{"result": "applied"}, 1},
		{"switchboard_config_reloads_total", map[string]string{"result": "rejected"}, 1},
		{"switchboard_breaker_state", with(billing, "host", "", "state", "open"), 1},
		{"switchboard_breaker_state", with(billing, "host", "", "state", "closed"), 0},
		{"switchboard_breaker_state", with(billing, "host", "", "state", "half_open"), 0},
		{"switchboard_bulkhead_in_use", search, 0},
		{"switchboard_bulkhead_limit", search, 4},
		{"switchboard_retry_budget_balance", billing, st.Clients[0].BudgetBalance},
		{"switchboard_calls_total", with(billing, "outcome", "failure"), 1},
		{"switchboard_calls_total", with(billing, "outcome", "rejected"), 1},
		{"switchboard_calls_total", with(billing, "outcome", "success"), 0},
		{"switchboard_calls_total", with(search, "outcome", "success"), 1},
		{"switchboard_call_duration_seconds", with(billing, "outcome", "failure"), 1},
		{"switchboard_call_duration_seconds", with(search, "outcome", "success"), 1},
		{"switchboard_attempts_total", with(billing, "outcome", "failure"), 1},
		{"switchboard_attempts_total", with(search, "outcome", "failure"), 1},
		{"switchboard_attempts_total", with(search, "outcome", "success"), 1},
		{"switchboard_retries_total", search, 1},
		{"switchboard_retries_total", billing, 0},
		{"switchboard_hedges_total", search, 0},
		{"switchboard_rejections_total", with(billing, "reason", "circuit_open"), 1},
		{"switchboard_rejections_total", with(billing, "reason", "bulkhead_full"), 0},
	}
	for _, tt := range tests {
		got, ok := value(fams, tt.name, tt.labels)
		if !ok || math.Abs(got-tt.want) > 1e-6*math.Max(1, math.Abs(tt.want)) {
			t.Errorf("%s%v: got %v (found %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	if got, ok := value(fams, "switchboard_rate_limit_tokens", search); !ok || got <= 0 || got > 10 {
		t.Errorf("switchboard_rate_limit_tokens{search}: got %v (found %v), want in (0, 10]", got, ok)
	}
	for _, gone := range []struct {
		name   string
		labels map[string]string
	}{
		{"switchboard_bulkhead_limit", billing},                               // no bulkhead
		{"switchboard_rate_limit_tokens", billing},                            // no rate limit
		{"switchboard_breaker_reject_probability", with(billing, "host", "")}, // not adaptive
	} {
		if _, ok := value(fams, gone.name, gone.labels); ok {
			t.Errorf("%s%v is reported for a component that is off", gone.name, gone.labels)
		}
	}
	// Bounded labels only: never a URL, a path or a query.
	allowed := map[string]bool{"client": true, "host": true, "outcome": true, "reason": true, "result": true, "state": true, "source": true}
	for name, f := range fams {
		if !strings.HasPrefix(name, "switchboard_") {
			t.Errorf("%s lacks the switchboard_ prefix", name)
		}
		for _, mt := range f.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if !allowed[lp.GetName()] || strings.Contains(lp.GetValue(), "/") {
					t.Errorf("%s has label %s=%q", name, lp.GetName(), lp.GetValue())
				}
			}
		}
	}
}

func TestBreakerHostsAreBoundedAndSorted(t *testing.T) {
	cc := config.Default()
	cc.Retry.MaxRetries = 0
	cc.CircuitBreaker.Enabled, cc.CircuitBreaker.FailureThreshold, cc.CircuitBreaker.Scope = true, 1, middleware.ScopeHost
	cc.CircuitBreaker.Mode, cc.CircuitBreaker.Window = middleware.BreakerAdaptive, 10*time.Second
	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"fanout": cc}},
		factory.Options{Base: fakert.Status(500), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, h := range []string{"c.test", "a.test", "b.test"} {
		call(t, r, "fanout", "http://"+h+"/x")
	}
	preg := prometheus.NewPedanticRegistry()
	preg.MustRegister(promswitchboard.NewCollector(r, promswitchboard.Options{MaxHosts: 2}))
	fams := scrape(t, preg)
	hosts := map[string]bool{}
	for _, mt := range fams["switchboard_breaker_state"].GetMetric() {
		for _, lp := range mt.GetLabel() {
			if lp.GetName() == "host" {
				hosts[lp.GetValue()] = true
			}
		}
	}
	if len(hosts) != 2 || !hosts["a.test"] || !hosts["b.test"] {
		t.Fatalf("hosts reported: got %v, want a.test and b.test (MaxHosts 2, sorted)", hosts)
	}
	if _, ok := value(fams, "switchboard_breaker_reject_probability", map[string]string{"client": "fanout", "host": "a.test"}); !ok {
		t.Errorf("no reject probability for an adaptive breaker's host")
	}
}

func TestPromlintFindsNoProblem(t *testing.T) {
	m := promswitchboard.NewMetrics(promswitchboard.Options{})
	opts := factory.Options{Base: byHost, Logger: slog.New(slog.DiscardHandler), Sources: nil}
	m.Instrument(&opts)
	cfg := twoClients()
	adaptive := config.Default()
	adaptive.CircuitBreaker.Enabled, adaptive.CircuitBreaker.Mode, adaptive.CircuitBreaker.Scope = true, middleware.BreakerAdaptive, middleware.ScopeHost
	cfg.Clients["adaptive"] = adaptive
	r, err := factory.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	call(t, r, "billing", "http://billing.test/")
	call(t, r, "adaptive", "http://a.test/")
	m.OnEvent(t.Context(), middleware.Event{Name: middleware.EventConfigUnchanged})
	m.OnEvent(t.Context(), middleware.Event{Name: middleware.EventHedgeSent, Client: "search"})
	for name, c := range map[string]prometheus.Collector{"NewMetrics": m, "NewCollector": promswitchboard.NewCollector(r, promswitchboard.Options{})} {
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range problems {
			t.Errorf("%s: promlint: %s: %s", name, p.Metric, p.Text)
		}
		if n := testutil.CollectAndCount(c); n < 10 {
			t.Errorf("%s: linted %d series, want every metric present", name, n)
		}
	}
}

func TestOptionsBucketsAndNoHosts(t *testing.T) {
	m := promswitchboard.NewMetrics(promswitchboard.Options{Buckets: []float64{0.5, 2}})
	opts := factory.Options{Base: fakert.Status(500), Logger: slog.New(slog.DiscardHandler)}
	m.Instrument(&opts)
	cc := config.Default()
	cc.Retry.MaxRetries = 0
	cc.CircuitBreaker.Enabled, cc.CircuitBreaker.Scope = true, middleware.ScopeHost
	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"a": cc}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	call(t, r, "a", "http://x.test/")
	preg := prometheus.NewPedanticRegistry()
	preg.MustRegister(m, promswitchboard.NewCollector(r, promswitchboard.Options{MaxHosts: -1}))
	fams := scrape(t, preg)
	for _, mt := range fams["switchboard_call_duration_seconds"].GetMetric() {
		if n := len(mt.GetHistogram().GetBucket()); n != 3 {
			t.Fatalf("buckets: got %d, want 3 (Options.Buckets 0.5 and 2, then +Inf)", n)
		}
	}
	if f, ok := fams["switchboard_breaker_state"]; ok {
		t.Fatalf("MaxHosts -1 reported %d breaker series, want none", len(f.GetMetric()))
	}
}

// TestAdaptiveBulkheadLimitScraped: in mode adaptive (max_concurrent 0)
// the bulkhead gauges are reported, the limit being the limiter's:
// initial_limit before any sample, the learned one clamped after a
// reload lowers max_limit.
func TestAdaptiveBulkheadLimitScraped(t *testing.T) {
	cfg := func(hi, initial int) config.Config {
		c := config.Default()
		c.Bulkhead = middleware.BulkheadSettings{Mode: middleware.BulkheadAdaptive, MinLimit: 1, MaxLimit: hi, InitialLimit: initial}
		return config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"search": c}}
	}
	r, err := factory.New(cfg(200, 7), factory.Options{Base: byHost, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	preg := prometheus.NewPedanticRegistry()
	preg.MustRegister(promswitchboard.NewCollector(r, promswitchboard.Options{}))
	search := map[string]string{"client": "search"}
	if got, ok := value(scrape(t, preg), "switchboard_bulkhead_limit", search); !ok || got != 7 {
		t.Errorf("switchboard_bulkhead_limit: got %v (reported %v), want 7", got, ok)
	}
	if err := r.Apply(cfg(4, 4)); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, preg)
	if got, ok := value(fams, "switchboard_bulkhead_limit", search); !ok || got != 4 {
		t.Errorf("after max_limit 4: switchboard_bulkhead_limit %v (reported %v), want 4", got, ok)
	}
	if _, ok := value(fams, "switchboard_bulkhead_in_use", search); !ok {
		t.Error("switchboard_bulkhead_in_use: not reported in mode adaptive")
	}
}
