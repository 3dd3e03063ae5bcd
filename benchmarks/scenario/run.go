package scenario

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-http/switchboard/benchmarks"
)

// Options sizes a run. Full() is docs/performance.md's run; Smoke() is CI's, tiny
// and fast, which proves the harness works and measures nothing.
type Options struct {
	// Policy is what every stack but bare is configured to (see Names).
	Policy benchmarks.Policy
	// HedgeDelay is switchboard-hedge's hedge.delay.
	HedgeDelay time.Duration
	// Seed seeds each scenario's server: every stack sees the same faults.
	Seed uint64
	// Stacks selects stacks by name; nil means all of Names().
	Stacks []string
	// CallTimeout bounds each logical call (a context deadline), so that
	// a run ends whatever a stack does.
	CallTimeout time.Duration
	// Latency is how long a normal attempt takes in every scenario.
	Latency time.Duration

	// Transient: TransientCalls logical calls, Concurrency at a time,
	// against a server that answers TransientShare of attempts 503.
	TransientCalls int
	TransientShare float64
	// Tail: TailCalls logical calls, Concurrency at a time; TailShare of
	// attempts take TailDelay instead of Latency.
	TailCalls int
	TailShare float64
	TailDelay time.Duration
	// Concurrency is the number of callers of the closed-loop scenarios.
	Concurrency int

	// Outage: one call every Interval (an open loop: a slow call does not
	// slow the load), Warmup of a healthy backend, then Outage of a backend
	// hard down, then After of a healthy one; then the calls in flight are
	// awaited. A failure faster than FastFail counts as failing fast.
	Interval time.Duration
	Warmup   time.Duration
	Outage   time.Duration
	After    time.Duration
	FastFail time.Duration
	// MaxInFlight caps the outage's calls in flight; a call that would
	// exceed it is not sent and is counted as Dropped.
	MaxInFlight int

	// Progress, when not nil, gets one line per scenario and stack.
	Progress io.Writer
}

// Full is docs/performance.md's run: about two minutes on 2 loaded cores.
func Full() Options {
	return Options{
		Policy: DefaultPolicy(), HedgeDelay: 50 * time.Millisecond, Seed: 15,
		CallTimeout: 20 * time.Second, Latency: 2 * time.Millisecond,
		TransientCalls: 1000, TransientShare: 0.2,
		TailCalls: 3000, TailShare: 0.01, TailDelay: 500 * time.Millisecond,
		Concurrency: 16,
		Interval:    10 * time.Millisecond,
		Warmup:      time.Second, Outage: 5 * time.Second, After: 3 * time.Second,
		FastFail: 10 * time.Millisecond, MaxInFlight: 2048,
	}
}

// Smoke is CI's run: every scenario and stack with tiny counts, delays and
// backoffs (a few seconds in all). Its numbers mean nothing.
func Smoke() Options {
	o := Full()
	o.Policy.InitialBackoff, o.Policy.MaxBackoff, o.Policy.Cooldown = time.Millisecond, 10*time.Millisecond, 50*time.Millisecond
	o.HedgeDelay = 5 * time.Millisecond
	o.CallTimeout = 5 * time.Second
	o.Latency = 0
	o.TransientCalls, o.TailCalls, o.TailDelay, o.Concurrency = 40, 60, 20*time.Millisecond, 4
	o.Interval, o.Warmup, o.Outage, o.After = 5*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	o.MaxInFlight = 256
	return o
}

// Row is one stack's results. Durations that could not be measured (no
// call failed fast, no success after the outage) are -1.
type Row struct {
	Stack string
	// Skipped says why the stack did not run; "" when it did.
	Skipped   string
	Transient Transient
	Tail      Tail
	Outage    Outage
}

// Transient is the 503 scenario's result.
type Transient struct {
	Calls, OK int
	// Attempts is the mean number of attempts per logical call.
	Attempts float64
}

// Tail is the heavy-tail scenario's result: percentiles of the logical
// call's latency, from the caller's Do to the body read to its end.
type Tail struct {
	Calls, OK           int
	P50, P99, P999, Max time.Duration
	// Attempts is the mean number of attempts per logical call (hedges
	// included); Delayed is how many attempts the server delayed.
	Attempts float64
	Delayed  int
}

// Outage is the hard-down scenario's result, over the calls started while
// the backend was down, and the recovery after it came back.
type Outage struct {
	// Calls started during the outage, and how many of them succeeded
	// (after the backend came back, by a retry); Dropped were not sent
	// (MaxInFlight).
	Calls, OK, Dropped int
	// Attempts is the mean number of attempts per call started during the
	// outage: the load a retrying client adds to a backend that is down.
	Attempts float64
	// FirstFastFail is the time from the outage's start until a call
	// started during it failed in less than FastFail.
	FirstFastFail time.Duration
	// P50 is the median latency of the calls started during the outage.
	P50 time.Duration
	// Recovery is the time from the backend's return until a call
	// succeeded.
	Recovery time.Duration
}

// Run runs every scenario for every selected stack, one stack at a time,
// each scenario with a fresh server and a fresh stack, and returns one Row
// per stack in the order of Names(). It talks only to its own loopback
// servers and returns once every call has ended.
func Run(ctx context.Context, o Options) ([]Row, error) {
	var rows []Row
	for _, b := range builders {
		if o.Stacks != nil && !slices.Contains(o.Stacks, b.name) {
			continue
		}
		row := Row{Stack: b.name}
		for _, sc := range []struct {
			name string
			run  func(context.Context, Options, benchmarks.Stack, *Server, *Row)
		}{
			{"transient 503s", runTransient},
			{"heavy tail", runTail},
			{"outage", runOutage},
		} {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			stack, skip, err := b.build(o, nil)
			if err != nil {
				return rows, err
			}
			if skip != "" {
				row.Skipped = skip
				break
			}
			start := time.Now()
			srv := NewServer(o.Seed)
			sc.run(ctx, o, stack, srv, &row)
			stack.Close()
			srv.Close()
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "%-22s %-15s %6.1fs\n", b.name, sc.name, time.Since(start).Seconds())
			}
		}
		if row.Skipped != "" && o.Progress != nil {
			fmt.Fprintf(o.Progress, "%-22s %s\n", b.name, row.Skipped)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// result is one logical call: when it started and ended, relative to the
// scenario's start, and whether it succeeded (a 200 whose body read whole).
type result struct {
	id         uint64
	start, end time.Duration
	ok         bool
	sent       bool
}

func (r result) latency() time.Duration { return r.end - r.start }

// call sends logical call id through d and reads the answer to its end;
// start is when it was launched, relative to t0.
func call(ctx context.Context, o Options, d benchmarks.Doer, url string, id uint64, t0 time.Time, start time.Duration) result {
	r := result{id: id, start: start, sent: true}
	ctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		panic(err) // a constant URL of our own server
	}
	req.Header.Set(CallHeader, strconv.FormatUint(id, 10))
	resp, err := d.Do(req)
	if resp != nil { // heimdall can return both
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.ok = err == nil && rerr == nil && resp.StatusCode == http.StatusOK && string(body) == okBody
	}
	r.end = time.Since(t0)
	return r
}

// closedLoop makes n calls, conc at a time, each caller starting its next
// call when its last one ended.
func closedLoop(ctx context.Context, o Options, s benchmarks.Stack, srv *Server, n int) []result {
	out := make([]result, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range min(o.Concurrency, n) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				out[i] = call(ctx, o, s.Doer, srv.URL, uint64(i+1), t0, time.Since(t0))
			}
		})
	}
	wg.Wait()
	return out
}

func runTransient(ctx context.Context, o Options, s benchmarks.Stack, srv *Server, row *Row) {
	srv.Set(Fault{Unavailable: o.TransientShare, Latency: o.Latency})
	rs := closedLoop(ctx, o, s, srv, o.TransientCalls)
	row.Transient = Transient{Calls: len(rs), OK: countOK(rs), Attempts: meanAttempts(srv, rs)}
}

func runTail(ctx context.Context, o Options, s benchmarks.Stack, srv *Server, row *Row) {
	srv.Set(Fault{Slow: o.TailShare, SlowDelay: o.TailDelay, Latency: o.Latency})
	rs := closedLoop(ctx, o, s, srv, o.TailCalls)
	lat := latencies(rs)
	row.Tail = Tail{
		Calls: len(rs), OK: countOK(rs), Attempts: meanAttempts(srv, rs),
		P50: percentile(lat, 0.50), P99: percentile(lat, 0.99), P999: percentile(lat, 0.999),
		Max: percentile(lat, 1), Delayed: srv.Delayed(),
	}
}

func runOutage(ctx context.Context, o Options, s benchmarks.Stack, srv *Server, row *Row) {
	healthy := Fault{Latency: o.Latency}
	srv.Set(healthy)
	var (
		mu       sync.Mutex
		rs       []result
		wg       sync.WaitGroup
		inFlight atomic.Int64
		dropped  int
		downAt   time.Duration = -1
		upAt     time.Duration = -1
		// launched counts the calls launched in the current phase: a
		// phase ends only after at least one, however late the ticks
		// come on a loaded machine.
		launched int
	)
	t0 := time.Now()
	tick := time.NewTicker(o.Interval)
	var id uint64
loop:
	for ctx.Err() == nil {
		now := time.Since(t0)
		// The phases switch on the loop's own goroutine, just before a
		// call is launched, so a call is in the outage exactly when it
		// was launched at or after downAt and before upAt.
		switch {
		case downAt < 0 && now >= o.Warmup:
			srv.Set(Fault{Down: true})
			downAt, launched = time.Since(t0), 0
		case downAt >= 0 && upAt < 0 && launched > 0 && now >= o.Warmup+o.Outage:
			srv.Set(healthy)
			upAt, launched = time.Since(t0), 0
		case upAt >= 0 && launched > 0 && now >= o.Warmup+o.Outage+o.After:
			break loop
		}
		id++
		callID, start := id, time.Since(t0)
		launched++
		if inFlight.Load() >= int64(o.MaxInFlight) {
			if downAt >= 0 && upAt < 0 {
				dropped++
			}
		} else {
			inFlight.Add(1)
			wg.Go(func() {
				defer inFlight.Add(-1)
				r := call(ctx, o, s.Doer, srv.URL, callID, t0, start)
				mu.Lock()
				rs = append(rs, r)
				mu.Unlock()
			})
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	tick.Stop()
	wg.Wait()
	summarize(o, srv, rs, downAt, upAt, dropped, row)
}

// summarize fills row.Outage from the outage's calls.
func summarize(o Options, srv *Server, rs []result, downAt, upAt time.Duration, dropped int, row *Row) {
	out := Outage{Dropped: dropped, FirstFastFail: -1, Recovery: -1}
	var during []result
	for _, r := range rs {
		if downAt >= 0 && r.start >= downAt && (upAt < 0 || r.start < upAt) {
			during = append(during, r)
			if !r.ok && r.latency() < o.FastFail {
				if d := r.end - downAt; out.FirstFastFail < 0 || d < out.FirstFastFail {
					out.FirstFastFail = d
				}
			}
		}
		if upAt >= 0 && r.ok && r.end >= upAt {
			if d := r.end - upAt; out.Recovery < 0 || d < out.Recovery {
				out.Recovery = d
			}
		}
	}
	out.Calls, out.OK = len(during), countOK(during)
	out.Attempts = meanAttempts(srv, during)
	out.P50 = percentile(latencies(during), 0.5)
	row.Outage = out
}

func countOK(rs []result) int {
	n := 0
	for _, r := range rs {
		if r.ok {
			n++
		}
	}
	return n
}

// meanAttempts is the mean number of attempts the server saw per call of
// rs; 0 for no calls.
func meanAttempts(srv *Server, rs []result) float64 {
	n, sum := 0, 0
	for _, r := range rs {
		if r.sent {
			n++
			sum += srv.Attempts(r.id)
		}
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

// latencies returns the latencies of the calls that were sent, sorted.
func latencies(rs []result) []time.Duration {
	out := make([]time.Duration, 0, len(rs))
	for _, r := range rs {
		if r.sent {
			out = append(out, r.latency())
		}
	}
	slices.Sort(out)
	return out
}

// percentile returns the q-quantile of sorted by the nearest-rank method
// (the smallest value with at least q of the values at or below it); -1
// for none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return -1
	}
	k := int(math.Ceil(float64(len(sorted))*q)) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
