package benchmarks

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/gojek/heimdall/v7"
	"github.com/gojek/heimdall/v7/httpclient"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
)

// Doer sends one logical call: *http.Client and heimdall's client are both.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Stack is one library configured to the shared policy.
type Stack struct {
	Name string
	Doer Doer
	// Close releases what the stack holds (registry, idle connections).
	Close func()
}

// The names of the stacks, as the benchmarks and docs/performance.md's tables show them.
const (
	NameBare          = "bare"
	NameSwitchboard   = "switchboard-all"
	NameDefaults      = "switchboard-defaults"
	NameRetryBreaker  = "switchboard-retry-breaker"
	NameFailsafe      = "failsafe-go"
	NameFailsafeHedge = "failsafe-go-hedge"
	NameRetryableHTTP = "go-retryablehttp"
	NameHeimdall      = "heimdall"
	NameMinimal       = "minimal"
)

// Stacks returns every stack over base with the shared policy and a first
// backoff of BaseBackoff. A nil base gives each stack a transport of its
// own for the network: switchboard builds it from its transport block, the
// others get NewTransport().
func Stacks(base http.RoundTripper) ([]Stack, error) { return StacksWithBackoff(base, BaseBackoff) }

// StacksWithBackoff is Stacks with backoff as the first retry's delay
// (doubling up to MaxBackoff); 0 retries at once, measuring the retry
// machinery without a timer where the library skips it for a zero delay.
// switchboard's defaults keep their own backoff.
func StacksWithBackoff(base http.RoundTripper, backoff time.Duration) ([]Stack, error) {
	all, err := Switchboard(AllLayers(backoff), base)
	if err != nil {
		return nil, err
	}
	rb, err := Switchboard(RetryBreaker(backoff), base)
	if err != nil {
		all.Close()
		return nil, err
	}
	defaults, err := Switchboard(config.Default(), base)
	if err != nil {
		all.Close()
		rb.Close()
		return nil, err
	}
	all.Name, rb.Name, defaults.Name = NameSwitchboard, NameRetryBreaker, NameDefaults
	return []Stack{
		Bare(base),
		all,
		rb,
		defaults,
		Failsafe(base, backoff),
		RetryableHTTP(base, backoff),
		Heimdall(base, backoff),
		Minimal(base, backoff),
	}, nil
}

// NewTransport is the network transport of every stack but switchboard's:
// a clone of http.DefaultTransport with switchboard's default pool sizes.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = config.DefaultMaxIdleConns
	t.MaxIdleConnsPerHost = config.DefaultMaxIdleConnsPerHost
	return t
}

// own returns base, or a new network transport and the func that closes its
// idle connections.
func own(base http.RoundTripper) (http.RoundTripper, func()) {
	if base != nil {
		return base, func() {}
	}
	t := NewTransport()
	return t, t.CloseIdleConnections
}

// AllLayers is switchboard's "all layers" client: every layer on except the
// total timeout. Retry to the shared policy (no jitter, every method, as the
// peers do), a budget with ratio 1 (every call may retry once, so that
// 503-then-200 keeps retrying under the benchmark's load), a consecutive
// breaker, a bulkhead and a rate limit too large to bind, and logging at
// debug with a logger that discards every level (the layer runs its
// Enabled check and nothing else). backoff is retry.initial_backoff.
func AllLayers(backoff time.Duration) config.ClientConfig {
	c := config.Default()
	c.Timeout = 0
	c.Retry.MaxRetries = MaxRetries
	c.Retry.InitialBackoff = backoff
	c.Retry.MaxBackoff = MaxBackoff
	c.Retry.Jitter = middleware.JitterNone
	c.Retry.RetryAllMethods = true
	c.Retry.Budget.Ratio = 1
	c.CircuitBreaker.Enabled = true
	c.CircuitBreaker.Mode = middleware.BreakerConsecutive
	c.CircuitBreaker.FailureThreshold = FailureThreshold
	c.CircuitBreaker.Cooldown = Cooldown
	c.Bulkhead.MaxConcurrent = 1 << 20
	c.RateLimit.RequestsPerSecond = 1e9
	c.RateLimit.Burst = 1 << 20
	c.Logging.Level = middleware.LogDebug
	return c
}

// RetryBreaker is switchboard's retry + breaker client, the peers' shape:
// the built-in defaults without the total timeout, retry to the shared
// policy as AllLayers has it (budget included), and a consecutive breaker.
// No bulkhead, no rate limit, logging at its default level.
func RetryBreaker(backoff time.Duration) config.ClientConfig {
	all := AllLayers(backoff)
	c := config.Default()
	c.Timeout = 0
	c.Retry = all.Retry
	c.CircuitBreaker = all.CircuitBreaker
	return c
}

// Switchboard builds a registry whose client "svc" has cc, over base (nil:
// the transport switchboard builds from cc's transport block), logging to a
// handler that is enabled at no level.
func Switchboard(cc config.ClientConfig, base http.RoundTripper) (Stack, error) {
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"svc": cc}}
	r, err := factory.New(cfg, factory.Options{Base: base, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return Stack{}, err
	}
	return Stack{Name: NameSwitchboard, Doer: r.Get("svc"), Close: func() { r.Close() }}, nil
}

// Bare is a plain *http.Client: no retry, no breaker.
func Bare(base http.RoundTripper) Stack {
	rt, closeIdle := own(base)
	return Stack{Name: NameBare, Doer: &http.Client{Transport: rt}, Close: closeIdle}
}

// Failsafe is failsafehttp's RoundTripper with a circuit breaker (outer,
// one outcome per logical call) around a retry policy, to the benchmark
// policy with backoff as the first delay: see FailsafeWith.
func Failsafe(base http.RoundTripper, backoff time.Duration) Stack {
	return FailsafeWith(base, BenchPolicy(backoff))
}

// FailsafeWith is Failsafe to policy p. failsafe-go does not close the
// responses it retries, so an OnRetryScheduled listener drains and closes
// them; ReturnLastFailure returns the last response on exhaustion instead
// of a retrypolicy.ExceededError. A zero InitialBackoff leaves failsafe's
// default, no delay (WithBackoff rejects zero). Full jitter is failsafe's
// jitter factor 1 (a delay uniform in (0, 2d]) over a backoff of half the
// policy's, which gives the policy's (0, d] exactly.
func FailsafeWith(base http.RoundTripper, p Policy) Stack {
	rt, closeIdle := own(base)
	return Stack{Name: NameFailsafe, Doer: &http.Client{Transport: failsafehttp.NewRoundTripper(rt, failsafePolicies(p)...)}, Close: closeIdle}
}

// FailsafeHedge is FailsafeWith plus failsafe-go's hedge policy innermost
// (With(breaker, retry, hedge)): each attempt of the retry policy sends a
// copy after delay, at most one, and the first answer that retry would not
// retry wins (CancelIf); a retryable one waits for the other copy. This is
// failsafe-go's documented composition, the closest it has to hedging in
// place of retry. Losers are cancelled by failsafe-go; their bodies are
// not closed by it.
func FailsafeHedge(base http.RoundTripper, p Policy, delay time.Duration) Stack {
	rt, closeIdle := own(base)
	hedge := hedgepolicy.NewBuilderWithDelay[*http.Response](delay).
		WithMaxHedges(1).
		CancelIf(func(resp *http.Response, err error) bool { return !Retryable(resp, err) }).
		Build()
	policies := append(failsafePolicies(p), hedge)
	return Stack{Name: NameFailsafeHedge, Doer: &http.Client{Transport: failsafehttp.NewRoundTripper(rt, policies...)}, Close: closeIdle}
}

// failsafePolicies returns FailsafeWith's breaker and retry policy, outer
// first.
func failsafePolicies(p Policy) []failsafe.Policy[*http.Response] {
	rb := retrypolicy.NewBuilder[*http.Response]().
		HandleIf(Retryable).
		AbortOnErrors(context.Canceled).
		WithMaxRetries(p.MaxRetries)
	switch {
	case p.InitialBackoff > 0 && p.FullJitter:
		rb = rb.WithBackoff(p.InitialBackoff/2, p.MaxBackoff/2).WithJitterFactor(1)
	case p.InitialBackoff > 0:
		rb = rb.WithBackoff(p.InitialBackoff, p.MaxBackoff)
	}
	retry := rb.
		WithDelayFunc(failsafehttp.DelayFunc).
		ReturnLastFailure().
		OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[*http.Response]) { drain(e.LastResult()) }).
		Build()
	breaker := circuitbreaker.NewBuilder[*http.Response]().
		HandleIf(BreakerFailure).
		WithFailureThreshold(uint(p.FailureThreshold)).
		WithDelay(p.Cooldown).
		Build()
	return []failsafe.Policy[*http.Response]{breaker, retry}
}

// RetryableHTTP is go-retryablehttp's StandardClient to the benchmark
// policy with backoff as the first delay: see RetryableHTTPWith.
func RetryableHTTP(base http.RoundTripper, backoff time.Duration) Stack {
	return RetryableHTTPWith(base, BenchPolicy(backoff))
}

// RetryableHTTPWith is go-retryablehttp's StandardClient to policy p: an
// *http.Client whose transport converts each request and runs the retrying
// client, which sends it through an inner *http.Client. No breaker (the
// library has none); the default stderr logger is off;
// PassthroughErrorHandler returns the last response on exhaustion instead
// of closing it and returning an error. Its DefaultBackoff is p's schedule
// without jitter (and honours Retry-After); for full jitter a Backoff func
// draws below DefaultBackoff's delay, unless Retry-After set it.
func RetryableHTTPWith(base http.RoundTripper, p Policy) Stack {
	rt, closeIdle := own(base)
	c := retryablehttp.NewClient()
	c.HTTPClient = &http.Client{Transport: rt}
	c.Logger = nil
	c.RetryMax = p.MaxRetries
	c.RetryWaitMin, c.RetryWaitMax = p.InitialBackoff, p.MaxBackoff
	if p.FullJitter {
		c.Backoff = func(lo, hi time.Duration, n int, resp *http.Response) time.Duration {
			d := retryablehttp.DefaultBackoff(lo, hi, n, resp)
			if resp != nil && resp.Header.Get("Retry-After") != "" {
				return d
			}
			return fullJitter(d)
		}
	}
	c.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return Retryable(resp, err), nil
	}
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return Stack{Name: NameRetryableHTTP, Doer: c.StandardClient(), Close: closeIdle}
}

// Heimdall is heimdall's httpclient to the benchmark policy with backoff
// as the first delay: see HeimdallWith.
func Heimdall(base http.RoundTripper, backoff time.Duration) Stack {
	return HeimdallWith(base, BenchPolicy(backoff))
}

// HeimdallWith is heimdall's httpclient over an *http.Client without a
// timeout (heimdall's own default would set a 30s http.Client.Timeout), to
// policy p. Heimdall retries every transport error and every status >= 500
// (not 429) and has no predicate to change that; it sleeps the backoff
// after the last attempt too, and its sleeps ignore the request's context.
// Its backoffs count in whole milliseconds, so a RetrierFunc gives it p's
// schedule. Its breaker lives in the separate hystrix plugin
// (afex/hystrix-go, global state, a goroutine per call), left out.
func HeimdallWith(base http.RoundTripper, p Policy) Stack {
	rt, closeIdle := own(base)
	c := httpclient.NewClient(
		httpclient.WithHTTPClient(&http.Client{Transport: rt}),
		httpclient.WithRetryCount(p.MaxRetries),
		httpclient.WithRetrier(heimdall.NewRetrierFunc(func(retry int) time.Duration { return p.Delay(retry + 1) })),
	)
	return Stack{Name: NameHeimdall, Doer: c, Close: closeIdle}
}

// Minimal is the hand-written baseline: see minimalRT.
func Minimal(base http.RoundTripper, backoff time.Duration) Stack {
	rt, closeIdle := own(base)
	return Stack{Name: NameMinimal, Doer: &http.Client{Transport: newMinimal(rt, backoff)}, Close: closeIdle}
}
