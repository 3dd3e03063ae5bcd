package scenario

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/benchmarks"
	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// The stacks of the scenarios, in the table's order. Each one talks to the
// network through a transport of its own: switchboard builds it from its
// transport block, the others get benchmarks.NewTransport() (the same pool
// sizes).
//
// How alike they are, and where they differ (docs/performance.md's notes say
// the same):
//   - Retries: 3 after the first attempt, on 429/502/503/504 and transport
//     errors, for every stack but bare. heimdall retries every status >= 500
//     (it has no predicate); switchboard retries GET/HEAD/OPTIONS/PUT/DELETE
//     only (the scenarios send GET), the peers every method.
//   - Backoff: switchboard's built-in schedule, full jitter under a cap of
//     500ms doubling to 30s, for every retrying stack: failsafe-go natively
//     (jitter factor 1 over half the backoff), go-retryablehttp and heimdall
//     through their backoff funcs. heimdall also sleeps after its last
//     attempt, and its sleeps ignore the request's context.
//   - Retry budget: switchboard only (its default, ratio 0.2 with 10/s
//     minimum over 10s); no peer has one on by default. failsafe-go has one
//     (budget.Budget) that is not configured here.
//   - Breaker: switchboard-breaker and failsafe-go open after 5 failed
//     logical calls in a row and probe after Policy.Cooldown (1s in the
//     full run; switchboard's default is 30s and its defaults have no
//     breaker). go-retryablehttp has none; heimdall's is the hystrix plugin
//     (global state, a goroutine per call), left out; bare has none.
//   - Total deadline: switchboard's defaults set 30s per logical call; the
//     peers set none. The harness bounds every call by Options.CallTimeout.
//   - Hedging: switchboard-hedge turns on `hedge` (one extra copy after
//     Options.HedgeDelay), in place of retry, by config keys.
//     failsafe-go-hedge is failsafe-go with its hedge policy inside the
//     retry policy (each attempt hedged once after the same delay), its
//     documented composition; switchboard-hedge keeps its defaults (no
//     breaker), failsafe-go-hedge keeps failsafe-go's breaker.
const (
	NameBare                = benchmarks.NameBare
	NameSwitchboardDefaults = benchmarks.NameDefaults
	NameSwitchboardBreaker  = "switchboard-breaker"
	NameSwitchboardHedge    = "switchboard-hedge"
	NameFailsafe            = benchmarks.NameFailsafe
	NameFailsafeHedge       = benchmarks.NameFailsafeHedge
	NameRetryableHTTP       = benchmarks.NameRetryableHTTP
	NameHeimdall            = benchmarks.NameHeimdall
)

// Names lists every stack of the scenarios in the table's order.
func Names() []string {
	out := make([]string, len(builders))
	for i, b := range builders {
		out[i] = b.name
	}
	return out
}

// NewStack builds a fresh stack called name (one of Names()) to o's policy
// over base; a nil base gives it a network transport of its own, as the
// scenarios run it. A non-empty skip says why the stack cannot run in this
// build, and the Stack is then zero.
func NewStack(name string, o Options, base http.RoundTripper) (s benchmarks.Stack, skip string, err error) {
	for _, b := range builders {
		if b.name == name {
			return b.build(o, base)
		}
	}
	return benchmarks.Stack{}, "", fmt.Errorf("no stack %q", name)
}

type builder struct {
	name  string
	build func(o Options, base http.RoundTripper) (s benchmarks.Stack, skip string, err error)
}

var builders = []builder{
	{NameBare, func(_ Options, base http.RoundTripper) (benchmarks.Stack, string, error) {
		return benchmarks.Bare(base), "", nil
	}},
	{NameSwitchboardDefaults, func(o Options, base http.RoundTripper) (benchmarks.Stack, string, error) {
		s, err := switchboardStack(NameSwitchboardDefaults, defaults(o.Policy), base)
		return s, "", err
	}},
	{NameSwitchboardBreaker, func(o Options, base http.RoundTripper) (benchmarks.Stack, string, error) {
		c := defaults(o.Policy)
		c.CircuitBreaker.Enabled = true
		c.CircuitBreaker.Mode = middleware.BreakerConsecutive
		c.CircuitBreaker.FailureThreshold = o.Policy.FailureThreshold
		c.CircuitBreaker.Cooldown = o.Policy.Cooldown
		s, err := switchboardStack(NameSwitchboardBreaker, c, base)
		return s, "", err
	}},
	{NameSwitchboardHedge, hedgeStack},
	{NameFailsafe, func(o Options, base http.RoundTripper) (benchmarks.Stack, string, error) {
		return benchmarks.FailsafeWith(base, o.Policy), "", nil
	}},
	{NameFailsafeHedge, func(o Options, base http.RoundTripper) (benchmarks.Stack, string, error) {
		return benchmarks.FailsafeHedge(base, o.Policy, o.HedgeDelay), "", nil
	}},
	{NameRetryableHTTP, func(o Options, base http.RoundTripper) (benchmarks.Stack, string, error) {
		return benchmarks.RetryableHTTPWith(base, o.Policy), "", nil
	}},
	{NameHeimdall, func(o Options, base http.RoundTripper) (benchmarks.Stack, string, error) {
		return benchmarks.HeimdallWith(base, o.Policy), "", nil
	}},
}

// defaults is switchboard's built-in client config with p's backoff (in the
// full run p's backoff is the built-in one, so this is config.Default()).
func defaults(p benchmarks.Policy) config.ClientConfig {
	c := config.Default()
	c.Retry.InitialBackoff = p.InitialBackoff
	c.Retry.MaxBackoff = p.MaxBackoff
	return c
}

func switchboardStack(name string, c config.ClientConfig, base http.RoundTripper) (benchmarks.Stack, error) {
	s, err := benchmarks.Switchboard(c, base)
	s.Name = name
	return s, err
}

// hedgeStack builds switchboard-hedge from config keys, as ops would write
// them, so that it runs as soon as the build knows them:
//
//	clients:
//	  svc:
//	    retry: {initial_backoff: …, max_backoff: …}
//	    hedge: {enabled: true, delay: …, max_hedges: 1}
//
// A build whose config has no hedge block rejects the keys as unknown; the
// stack is then skipped with that error as the reason, and only that
// stack: any other error fails the run.
func hedgeStack(o Options, base http.RoundTripper) (benchmarks.Stack, string, error) {
	src := treeSource{"clients": map[string]any{"svc": map[string]any{
		"retry": map[string]any{
			"initial_backoff": o.Policy.InitialBackoff.String(),
			"max_backoff":     o.Policy.MaxBackoff.String(),
		},
		"hedge": map[string]any{
			"enabled":    true,
			"delay":      o.HedgeDelay.String(),
			"max_hedges": 1,
		},
	}}}
	cfg, err := config.Loader{Sources: []config.Source{src}}.Load()
	if err != nil {
		for _, fe := range config.FieldErrors(err) {
			if strings.HasPrefix(fe.Path, "clients.svc.hedge") && strings.Contains(fe.Msg, "unknown key") {
				return benchmarks.Stack{}, fmt.Sprintf("skipped: this build does not know the hedge keys (%s: %s); hedging is not merged yet", fe.Path, fe.Msg), nil
			}
		}
		return benchmarks.Stack{}, "", fmt.Errorf("%s: %w", NameSwitchboardHedge, err)
	}
	r, err := factory.New(cfg, factory.Options{Base: base, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return benchmarks.Stack{}, "", fmt.Errorf("%s: %w", NameSwitchboardHedge, err)
	}
	return benchmarks.Stack{Name: NameSwitchboardHedge, Doer: r.Get("svc"), Close: func() { r.Close() }}, "", nil
}

// treeSource is a config.Source holding a fixed tree, shaped like the YAML
// file. Safe for concurrent use: Read returns the tree, which nothing
// changes.
type treeSource map[string]any

func (treeSource) Name() string                    { return "scenario" }
func (t treeSource) Read() (map[string]any, error) { return t, nil }

// DefaultPolicy is the policy of the full run: switchboard's built-in retry
// schedule (3 retries, full jitter under 500ms doubling to 30s), and a
// breaker of 5 failures in a row with a 1s cooldown, short so that the
// recovery row measures the breakers' probing rather than the run's length.
func DefaultPolicy() benchmarks.Policy {
	return benchmarks.Policy{
		MaxRetries:       middleware.DefaultMaxRetries,
		InitialBackoff:   middleware.DefaultInitialBackoff,
		MaxBackoff:       middleware.DefaultMaxBackoff,
		FullJitter:       true,
		FailureThreshold: middleware.DefaultFailureThreshold,
		Cooldown:         time.Second,
	}
}
