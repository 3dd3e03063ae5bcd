package middleware

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// BreakerState is the state of a circuit breaker (of one host's breaker in
// scope host). The zero value is BreakerClosed. It is a plain value, safe to
// copy and to share between goroutines.
type BreakerState int

// The breaker states.
const (
	BreakerClosed   BreakerState = iota // calls flow and their outcomes are counted
	BreakerOpen                         // calls are rejected until the cooldown ends
	BreakerHalfOpen                     // a few probes test whether the backend is back
)

// String returns "closed", "open" or "half_open", the spelling of status
// reports and metrics labels.
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half_open"
	}
	return "BreakerState(" + strconv.Itoa(int(s)) + ")"
}

// breakerConf is BreakerSettings with every default applied, in this one
// place, so that the zero value of each field works. It is immutable once
// built: Update swaps in a new one.
type breakerConf struct {
	enabled          bool
	rate             bool // mode rate
	adaptive         bool // mode adaptive; neither is consecutive
	k                float64
	scopeHost        bool
	failureThreshold int
	rateThreshold    float64
	window           time.Duration
	width            time.Duration // window / windowBuckets, at least 1ns
	minimumCalls     int
	cooldown         time.Duration
	halfOpenMax      int
	successThreshold int
}

func newBreakerConf(s BreakerSettings) *breakerConf {
	c := &breakerConf{
		enabled:          s.Enabled,
		rate:             s.Mode == BreakerRate,
		adaptive:         s.Mode == BreakerAdaptive,
		k:                s.AdaptiveK,
		scopeHost:        s.Scope == ScopeHost,
		failureThreshold: s.FailureThreshold,
		rateThreshold:    s.FailureRateThreshold,
		window:           s.Window,
		minimumCalls:     s.MinimumCalls,
		cooldown:         s.Cooldown,
		halfOpenMax:      s.HalfOpenMaxRequests,
		successThreshold: s.SuccessThreshold,
	}
	if c.failureThreshold < 1 {
		c.failureThreshold = DefaultFailureThreshold
	}
	if !(c.rateThreshold > 0 && c.rateThreshold <= 1) { // also catches NaN
		c.rateThreshold = DefaultFailureRateThreshold
	}
	if c.window <= 0 {
		c.window = DefaultBreakerWindow
	}
	if !(c.k >= 1) { // also catches NaN
		c.k = DefaultAdaptiveK
	}
	c.width = max(c.window/windowBuckets, 1)
	if c.minimumCalls < 1 {
		c.minimumCalls = DefaultMinimumCalls
	}
	if c.cooldown <= 0 {
		c.cooldown = DefaultCooldown
	}
	if c.halfOpenMax < 1 {
		c.halfOpenMax = DefaultHalfOpenMaxRequests
	}
	if c.successThreshold < 1 {
		c.successThreshold = DefaultSuccessThreshold
	}
	return c
}

// verdict is what one logical call tells a breaker: its Outcome, judged
// by BreakerOptions.IsFailure (see Breaker.classify).
type verdict uint8

const (
	verdictSuccess verdict = iota
	verdictFailure
	verdictNone // a local rejection or a caller gone: neither success nor failure
)

// ticket is what an admitted call carries back to record: the generation it
// was admitted in, so that outcomes of calls admitted before a state change
// do not count in the new state, and whether it holds a half-open probe slot.
type ticket struct {
	gen   uint64
	probe bool
}

// transition is a state change decided by allow or record; from == to means
// none. reason says what triggered it, for the event.
type transition struct {
	from, to BreakerState
	reason   string
}

func (t transition) changed() bool { return t.from != t.to }

// circuit is the state machine of one breaker. Its decision methods (allow,
// record, retune, view) are pure: they take the time and the settings as
// arguments, read no clock, call no callback and never block, so that tests
// can drive them with any clock.
//
// A circuit is not safe for concurrent use: the owning Breaker calls every
// method with its mu held. The two atomic mirrors are the exception: they
// are written under mu by publish and read without it by the fast path.
type circuit struct {
	host string // "" in scope client

	state     BreakerState
	gen       uint64        // bumped at every state change and reset
	failures  int           // closed, consecutive mode: failures in a row
	window    rollingWindow // closed, rate mode; adaptive mode (requests, and failures as not accepted)
	probeAt   time.Time     // open: when the cooldown ends
	probes    int           // half-open: probes in flight
	successes int           // half-open: probe successes so far

	// closedGen is gen+1 while the circuit is closed, else 0: a call may be
	// admitted with a ticket of gen without taking the lock.
	closedGen atomic.Uint64
	// cleanGen is gen+1 while the circuit is closed in consecutive mode with
	// no failure counted, else 0: a success of that generation changes
	// nothing and needs no lock.
	cleanGen atomic.Uint64

	// Scope host bookkeeping, owned by hostTable.
	prev, next *circuit
	inClosed   bool // which LRU list the circuit is linked in
	evicted    bool // dropped from the table: outcomes are ignored
}

// allow decides whether a call may go ahead at now; draw is a random value
// in [0, 1) for adaptive mode. An admitted call gets a ticket for record; a rejected one gets the time until the next probe (zero
// when the breaker is half-open with every probe slot taken). An open
// circuit whose cooldown has ended moves to half-open here, reported in tr.
// A closed circuit does not read now; the caller may pass the zero time.
func (c *circuit) allow(now time.Time, cf *breakerConf, draw float64) (tk ticket, retryIn time.Duration, ok bool, tr transition) {
	tr = transition{from: c.state, to: c.state}
	switch c.state {
	case BreakerClosed:
		if cf.adaptive {
			return c.throttle(now, cf, draw)
		}
		return ticket{gen: c.gen}, 0, true, tr
	case BreakerOpen:
		if now.Before(c.probeAt) {
			return ticket{}, c.probeAt.Sub(now), false, tr
		}
		c.setState(BreakerHalfOpen)
		tr.to = BreakerHalfOpen
		tr.reason = "cooldown of " + cf.cooldown.String() + " ended"
	}
	// Half-open.
	if c.probes >= cf.halfOpenMax {
		return ticket{}, 0, false, tr
	}
	c.probes++
	return ticket{gen: c.gen, probe: true}, 0, true, tr
}

// throttle is allow in adaptive mode, where the circuit stays closed: it
// rejects the call with the probability the counts of the window give
// (see adaptiveProbability), and a rejected call counts as a request the
// backend did not accept, as the SRE book has it, so that throttling
// eases only as accepted calls come back.
func (c *circuit) throttle(now time.Time, cf *breakerConf, draw float64) (ticket, time.Duration, bool, transition) {
	tr := transition{from: c.state, to: c.state}
	total, failures := c.window.sum(now, cf.width)
	if draw < adaptiveProbability(total, total-failures, cf.k) {
		c.window.add(now, cf.width, true)
		return ticket{}, 0, false, tr
	}
	return ticket{gen: c.gen}, 0, true, tr
}

// adaptiveProbability is the SRE book's client-side rejection probability
// for requests attempted and accepts answered over the window:
// max(0, (requests − k·accepts) / (requests + 1)).
func adaptiveProbability(requests, accepts int, k float64) float64 {
	return max(0, (float64(requests)-k*float64(accepts))/float64(requests+1))
}

// probability returns the rejection probability a call arriving at now
// would face: adaptive mode's, 0 in the other modes while closed, 1 while
// open. It changes nothing.
func (c *circuit) probability(now time.Time, cf *breakerConf) float64 {
	switch {
	case c.view(now) == BreakerOpen:
		return 1
	case c.state != BreakerClosed || !cf.adaptive:
		return 0
	}
	total, failures := c.window.sum(now, cf.width)
	return adaptiveProbability(total, total-failures, cf.k)
}

// record counts the outcome of a call admitted with tk, at now, and reports
// the state change it causes, if any. Outcomes of an older generation are
// dropped; an ignored outcome only frees the probe slot it held. now is
// read only to count in rate mode and to open the circuit (after a failure);
// otherwise the caller may pass the zero time.
func (c *circuit) record(now time.Time, cf *breakerConf, tk ticket, out verdict) transition {
	tr := transition{from: c.state, to: c.state}
	if tk.gen != c.gen {
		return tr
	}
	switch c.state {
	case BreakerClosed:
		switch {
		case out == verdictNone:
		case cf.adaptive:
			c.window.add(now, cf.width, out == verdictFailure)
		case cf.rate:
			c.window.add(now, cf.width, out == verdictFailure)
			total, failures := c.window.sum(now, cf.width)
			if total < cf.minimumCalls {
				break
			}
			if r := float64(failures) / float64(total); r >= cf.rateThreshold {
				tr.reason = fmt.Sprintf("failure rate %.2f over %d calls in %v", r, total, cf.window)
				c.open(now, cf)
			}
		case out == verdictFailure:
			c.failures++
			if c.failures >= cf.failureThreshold {
				tr.reason = strconv.Itoa(c.failures) + " consecutive failures"
				c.open(now, cf)
			}
		default:
			c.failures = 0
		}
	case BreakerHalfOpen:
		if tk.probe && c.probes > 0 {
			c.probes--
		}
		switch out {
		case verdictFailure:
			tr.reason = "half-open probe failed"
			c.open(now, cf)
		case verdictSuccess:
			c.successes++
			if c.successes >= cf.successThreshold {
				tr.reason = strconv.Itoa(c.successes) + " probe successes"
				c.setState(BreakerClosed)
			}
		}
	}
	tr.to = c.state
	return tr
}

// open moves the circuit to open with a cooldown from now.
func (c *circuit) open(now time.Time, cf *breakerConf) {
	c.setState(BreakerOpen)
	c.probeAt = now.Add(cf.cooldown)
}

// setState enters s in a new generation with every count cleared.
func (c *circuit) setState(s BreakerState) {
	c.state = s
	c.gen++
	c.failures = 0
	c.window = rollingWindow{}
	c.probes = 0
	c.successes = 0
}

// retune adapts the circuit to new settings, keeping its state: an open
// circuit keeps its probe time (the remaining cooldown), half-open probes in
// flight stay in flight, and counts are kept, so that new thresholds apply to
// them from the next outcome. Counts are cleared only when they no longer
// mean the same: a change of mode, or of the window in rate mode.
func (c *circuit) retune(old, cf *breakerConf) {
	if old.rate != cf.rate || old.adaptive != cf.adaptive || ((cf.rate || cf.adaptive) && old.window != cf.window) {
		c.failures = 0
		c.window = rollingWindow{}
	}
}

// view returns the state a call arriving at now would find: an open
// circuit whose cooldown has ended reads as half-open. It changes nothing.
func (c *circuit) view(now time.Time) BreakerState {
	if c.state == BreakerOpen && !now.Before(c.probeAt) {
		return BreakerHalfOpen
	}
	return c.state
}

// publish refreshes the atomic mirrors after a change; cf is the current
// settings.
func (c *circuit) publish(cf *breakerConf) {
	var closed, clean uint64
	if c.state == BreakerClosed && !c.evicted && !cf.adaptive { // adaptive admits under the lock
		closed = c.gen + 1
		if !cf.rate && !cf.adaptive && c.failures == 0 {
			clean = c.gen + 1
		}
	}
	c.closedGen.Store(closed)
	c.cleanGen.Store(clean)
}

// windowBuckets is how many time buckets a rate-mode window is made of:
// outcomes age out in steps of a tenth of the window.
const windowBuckets = 10

// rollingWindow counts outcomes over the last Window in windowBuckets ring
// buckets of width Window/windowBuckets. Bucket k covers
// [origin + k·width, origin + (k+1)·width), origin being the time of the
// first outcome; an outcome counts from the moment it is added until its
// bucket is windowBuckets buckets old, so for at most Window and at least
// Window - width. It is a fixed array, so counting allocates nothing. The
// zero value is empty.
type rollingWindow struct {
	origin  time.Time
	buckets [windowBuckets]windowBucket
}

type windowBucket struct {
	slot            int64 // which bucket of the timeline this ring entry holds
	total, failures int
}

// slot returns the number of the bucket holding now. A time before origin
// (a call that read the clock just before another recorded first) falls
// into bucket 0.
func (w *rollingWindow) slot(now time.Time, width time.Duration) int64 {
	if w.origin.IsZero() {
		w.origin = now
	}
	d := now.Sub(w.origin)
	if d < 0 {
		return 0
	}
	return int64(d / width)
}

// add counts one outcome at now.
func (w *rollingWindow) add(now time.Time, width time.Duration, failure bool) {
	s := w.slot(now, width)
	b := &w.buckets[s%windowBuckets]
	switch {
	case b.slot > s:
		return // the ring moved on past s: the outcome is already out of the window
	case b.slot < s:
		*b = windowBucket{slot: s}
	}
	b.total++
	if failure {
		b.failures++
	}
}

// sum returns the outcomes counted in the window ending at now.
func (w *rollingWindow) sum(now time.Time, width time.Duration) (total, failures int) {
	s := w.slot(now, width)
	for i := range w.buckets {
		if b := &w.buckets[i]; b.slot > s-windowBuckets && b.slot <= s {
			total += b.total
			failures += b.failures
		}
	}
	return total, failures
}
