package middleware

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrCircuitOpen is matched, with errors.Is, by the error of every call that
// a Breaker rejected (a *CircuitOpenError), also through the *url.Error that
// http.Client wraps around it.
var ErrCircuitOpen = errors.New("circuit breaker is open")

// CircuitOpenError is the error of a call rejected by a Breaker: by an
// open breaker, by a half-open one whose probe slots are all taken, or by
// adaptive mode's throttling (Probability > 0). errors.Is(err,
// ErrCircuitOpen) reports true for it. The zero value reads as a rejection
// by a half-open breaker of scope client. It is not changed once returned,
// so it is safe for concurrent use.
type CircuitOpenError struct {
	// Host is the URL host whose breaker rejected the call in scope host;
	// "" in scope client.
	Host string
	// RetryIn is the time until the breaker admits its next probe. Zero means
	// the breaker is half-open and waits for the probes in flight, or, with
	// Probability > 0, that adaptive throttling rejected the call.
	RetryIn time.Duration
	// Probability is the rejection probability with which adaptive mode's
	// throttling rejected the call (the breaker stays closed in that mode);
	// zero for a rejection by an open or half-open breaker.
	Probability float64
}

// Error names the host (scope host) and why the call was rejected: the
// time until the next probe, the half-open probes in flight, or adaptive
// throttling and its probability.
func (e *CircuitOpenError) Error() string {
	var sb strings.Builder
	sb.WriteString("switchboard: circuit breaker ")
	if e.Host != "" {
		sb.WriteString("for host ")
		sb.WriteString(e.Host)
		sb.WriteString(" ")
	}
	switch {
	case e.Probability > 0:
		sb.WriteString("rejected the call: adaptive throttling, rejection probability ")
		sb.WriteString(strconv.FormatFloat(e.Probability, 'f', 3, 64))
	case e.RetryIn > 0:
		d := e.RetryIn
		if d >= time.Millisecond {
			d = d.Round(time.Millisecond)
		}
		sb.WriteString("is open: next probe in ")
		sb.WriteString(d.String())
	default:
		sb.WriteString("is open: waiting for the half-open probes in flight")
	}
	return sb.String()
}

// Is reports whether target is ErrCircuitOpen.
func (e *CircuitOpenError) Is(target error) bool { return target == ErrCircuitOpen }

// BreakerOptions are the code-only parts of a Breaker: hooks that a config
// file cannot express. The zero value is valid: default failure
// classification, no callback, no events, 1024 hosts. NewBreaker copies
// it; the hooks it holds must be safe for concurrent use.
type BreakerOptions struct {
	// IsFailure classifies the outcome of a call that was neither rejected
	// locally nor abandoned by its caller (see Breaker and Classify). Nil means IsBreakerFailure: a transport error or
	// a status >= 500. It is called on the request's goroutine, without any
	// lock held, and must be safe for concurrent use.
	IsFailure func(resp *http.Response, err error) bool
	// OnStateChange is called after every state change of the breaker (of
	// one host's breaker in scope host, host "" in scope client). It is never
	// called with a lock held, so it may call the Breaker's methods. Calls
	// are made one at a time and in the order of the changes, on the
	// goroutine of one of the requests involved. Nil means no callback.
	OnStateChange func(host string, from, to BreakerState)
	// Events receives EventCircuitOpened (slog.LevelWarn),
	// EventCircuitHalfOpen and EventCircuitClosed (slog.LevelInfo) and
	// EventCircuitRejected (slog.LevelDebug: an open breaker rejects every
	// call, and the opened event already says so at WARN; an Observer sees
	// them all). Nil emits nothing.
	Events *Events
	// Rand returns a random value in [0, 1) for adaptive mode's draws;
	// nil means math/rand/v2's Float64. It is called with the breaker's
	// lock held and must not call the Breaker.
	Rand func() float64
	// MaxHosts bounds how many hosts a breaker of scope host tracks. Zero
	// (or less) means DefaultBreakerMaxHosts. A new host that finds the
	// bound reached makes the breaker forget the least recently used closed
	// host; when every tracked host is open or half-open, it forgets the
	// least recently used of those, whose next call then finds a fresh,
	// closed breaker. New hosts are never refused nor rejected.
	MaxHosts int
}

// IsBreakerFailure is the default BreakerOptions.IsFailure: it reports true
// for a transport error, a missing response and a status >= 500; 429 and
// every other status below 500 are successes, since the backend answered.
// It is safe for concurrent use.
func IsBreakerFailure(resp *http.Response, err error) bool {
	return err != nil || statusFailed(resp)
}

// Breaker is a circuit breaker: it stops calling a backend that keeps
// failing, and tries it again after a cooldown.
//
// Closed, it lets calls through and counts their outcomes: in consecutive
// mode it opens after FailureThreshold failures in a row (one success resets
// the count); in rate mode it opens when at least MinimumCalls outcomes fall
// in the rolling Window and the share of failures among them reaches
// FailureRateThreshold (checked at every outcome; outcomes age out in steps
// of Window/10). Open, it rejects every call at once with a
// *CircuitOpenError that carries the time until the next probe. Once
// Cooldown has passed since it opened, the next call finds it half-open: it
// admits up to HalfOpenMaxRequests probes at a time (rejecting the others
// as open); SuccessThreshold probe successes close it and one probe failure
// opens it again for a new Cooldown.
//
// In adaptive mode (client-side throttling, from the Google SRE book's
// "Handling Overload") the breaker never opens: it counts, over the rolling
// Window, the calls attempted (requests) and those the backend accepted (not
// a failure), and rejects each new call locally with probability
// max(0, (requests − AdaptiveK·accepts) / (requests + 1)). A rejected call
// counts as a request that was not accepted (a call counts when it ends,
// so calls still in flight are not yet in the counts), so throttling sheds load
// smoothly while the backend is overloaded and eases as its successes come
// back; a few calls always go through and act as probes. Rejections carry
// ErrCircuitOpen (a *CircuitOpenError with RetryIn 0 and the probability
// in Probability, whose message names the adaptive throttling), emit
// EventCircuitRejected with the probability in Reason, and Probabilities
// reports the current probability. The other settings but Window, Scope
// and AdaptiveK do not apply.
//
// One logical call is one outcome: the layer sits outside retry. A failure
// is what BreakerOptions.IsFailure says, by default a transport error or a
// status >= 500. Local back-pressure is not a backend failure: a call whose
// Outcome (Classify) is OutcomeRejected (ErrBulkheadFull, a bulkhead or
// rate-limit wait ended by a deadline, ErrRateLimited, ErrCircuitOpen) or
// OutcomeCallerGone (an error after the caller's own context ended:
// cancelled, or past the caller's deadline) counts as neither success nor
// failure in every mode and state (gobreaker's "excluded"; in adaptive
// mode, neither a request nor an accept), whatever IsFailure says, and a
// half-open probe that ends that way frees its slot. A call cut off by the deadline of the
// Timeout layer is not the caller's doing: it is a failure, so that a
// backend that hangs opens the breaker. The package doc's table lists
// every case. Outcomes of calls admitted before a state change (a
// generation, as in gobreaker) are not counted in the new state.
//
// In scope client the breaker has one state; in scope host it has one per
// request URL host (req.URL.Host as written), bounded by
// BreakerOptions.MaxHosts: least recently used closed hosts are forgotten
// first, and open ones only when no closed host is left.
//
// The move from open to half-open happens at the first call after the
// cooldown; State and States report it already but change nothing. State
// changes are reported to BreakerOptions.OnStateChange and as events,
// after the breaker's lock is released.
//
// Disabled (BreakerSettings.Enabled false), the layer passes every call
// through untouched and counts nothing; its state reads closed.
//
// A Breaker is created with NewBreaker; the zero value is not usable. It
// is safe for concurrent use.
type Breaker struct {
	isFailure func(*http.Response, error) bool
	onChange  func(host string, from, to BreakerState)
	rand      func() float64
	ev        *Events
	maxHosts  int

	// conf is the current settings. It is written under mu and read without
	// it by the fast path, which may act on the settings of a moment ago.
	conf atomic.Pointer[breakerConf]
	// client is the one circuit of scope client. It is never replaced, so
	// the fast path can read its atomic mirrors without mu; its other fields
	// are guarded by mu.
	client circuit

	mu         sync.Mutex
	hosts      hostTable           // guarded by mu; scope host
	pending    []pendingTransition // guarded by mu; changes not yet reported
	delivering bool                // guarded by mu; a goroutine is reporting pending
}

// NewBreaker returns a breaker with the settings s and the options o. The
// zero value of a field of s means its built-in default (see
// newBreakerConf and DefaultBreakerSettings), except Enabled: a breaker
// made from the zero BreakerSettings is disabled and passes every call
// through until Update enables it.
func NewBreaker(s BreakerSettings, o BreakerOptions) *Breaker {
	b := &Breaker{
		isFailure: o.IsFailure,
		onChange:  o.OnStateChange,
		ev:        o.Events,
		maxHosts:  o.MaxHosts,
		rand:      o.Rand,
	}
	if b.rand == nil {
		b.rand = rand.Float64
	}
	if b.isFailure == nil {
		b.isFailure = IsBreakerFailure
	}
	if b.maxHosts <= 0 {
		b.maxHosts = DefaultBreakerMaxHosts
	}
	cf := newBreakerConf(s)
	b.client.publish(cf)
	b.conf.Store(cf)
	return b
}

// Update retunes the breaker in place, keeping its state: an open breaker
// stays open for the rest of the cooldown it started with (a new Cooldown
// applies from its next opening), probes in flight stay in flight, and the
// counts are kept, so new thresholds apply to them from the next outcome: a
// breaker that counted 3 failures in a row when FailureThreshold goes from
// 5 to 2 opens at the next failure. Counts are cleared when they no longer
// mean the same: when Mode changes, or Window in rate or adaptive mode.
// When Enabled or Scope changes, or Mode goes into or out of adaptive (which
// never opens), the breaker starts afresh: every state is dropped, each
// circuit that was not closed is reported as closed (to OnStateChange and
// as EventCircuitClosed), and outcomes of calls in flight are ignored.
// Update is safe for concurrent use.
func (b *Breaker) Update(s BreakerSettings) {
	cf := newBreakerConf(s)
	b.mu.Lock()
	old := b.conf.Load()
	if cf.enabled != old.enabled || cf.scopeHost != old.scopeHost || cf.adaptive != old.adaptive {
		b.resetLocked()
	} else {
		b.client.retune(old, cf)
		for _, c := range b.hosts.m {
			c.retune(old, cf)
			c.publish(cf)
		}
	}
	b.client.publish(cf)
	b.conf.Store(cf)
	b.mu.Unlock()
	b.deliver()
}

// resetLocked drops every state, queueing a change to closed for each
// circuit that was not closed. b.mu must be held.
func (b *Breaker) resetLocked() {
	reset := func(c *circuit) {
		if c.state != BreakerClosed {
			b.pending = append(b.pending, pendingTransition{
				ctx: context.Background(), host: c.host,
				tr: transition{from: c.state, to: BreakerClosed, reason: "breaker reset by a settings update"},
			})
		}
	}
	reset(&b.client)
	b.client.setState(BreakerClosed)
	for _, c := range b.hosts.m {
		reset(c)
	}
	b.hosts.reset()
}

// State returns the state of the breaker in scope client. In scope host it
// returns the worst state of any host: open if one is open, else half-open
// if one is, else closed. A disabled breaker is closed. An open breaker
// whose cooldown has ended reads as half-open. It is safe for concurrent
// use and may be called from OnStateChange.
func (b *Breaker) State() BreakerState {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.conf.Load().scopeHost {
		return b.client.view(now)
	}
	worst := BreakerClosed
	for _, c := range b.hosts.m {
		switch c.view(now) {
		case BreakerOpen:
			return BreakerOpen
		case BreakerHalfOpen:
			worst = BreakerHalfOpen
		}
	}
	return worst
}

// Probabilities returns, keyed as States, the probability that a call is
// rejected now: in adaptive mode the SRE book's throttling probability over
// the window; in the other modes 1 while open and 0 otherwise (a half-open
// breaker admits its probes). It changes nothing and is safe for
// concurrent use.
func (b *Breaker) Probabilities() map[string]float64 {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	cf := b.conf.Load()
	if !cf.scopeHost {
		return map[string]float64{"": b.client.probability(now, cf)}
	}
	out := make(map[string]float64, len(b.hosts.m))
	for host, c := range b.hosts.m {
		out[host] = c.probability(now, cf)
	}
	return out
}

// ProbeIn returns, keyed as States, how long until each open circuit lets
// its next probe through (the rest of its cooldown); a circuit that is not
// open is left out, so the map is empty when none is. It changes nothing
// and is safe for concurrent use.
func (b *Breaker) ProbeIn() map[string]time.Duration {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]time.Duration{}
	add := func(key string, c *circuit) {
		if c.view(now) == BreakerOpen {
			out[key] = c.probeAt.Sub(now)
		}
	}
	if !b.conf.Load().scopeHost {
		add("", &b.client)
		return out
	}
	for host, c := range b.hosts.m {
		add(host, c)
	}
	return out
}

// States returns a snapshot of the state of each host the breaker tracks
// in scope host, and {"": state} in scope client; the caller owns the map.
// It reads like State and changes nothing. It is safe for concurrent use
// and may be called from OnStateChange.
func (b *Breaker) States() map[string]BreakerState {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.conf.Load().scopeHost {
		return map[string]BreakerState{"": b.client.view(now)}
	}
	out := make(map[string]BreakerState, len(b.hosts.m))
	for host, c := range b.hosts.m {
		out[host] = c.view(now)
	}
	return out
}
