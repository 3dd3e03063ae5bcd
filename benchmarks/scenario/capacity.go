package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/switchboard-http/switchboard/middleware"
)

// CapacityOptions sizes the capacity scenario: a Backend of High workers
// for Healthy, then of Low workers for Degraded, each request served in
// Service, under an open loop of Rate calls per second (a call is launched
// on schedule whether or not the ones before it have ended, as independent
// users arrive; a closed loop would let a stack that slows its callers
// lower its own load, and one that refuses at once would spin). Each stack
// runs once per round, Rounds rounds, in an order rotated by one stack per
// round; the figures are medians over the rounds.
type CapacityOptions struct {
	// Stacks selects stacks by name; nil means all of CapacityNames().
	Stacks []string
	// Rounds is the number of rounds; zero means 1.
	Rounds int
	// Rate is the offered load, in calls per second.
	Rate float64
	// Service is how long a worker takes for one request.
	Service time.Duration
	// High and Low are the backend's workers before and after the drop.
	High, Low int
	// Healthy and Degraded are how long the backend has High and Low
	// workers; Settled is the last part of Degraded, reported on its own
	// (the state the limit has settled to).
	Healthy, Degraded, Settled time.Duration
	// CallTimeout bounds each call (a context deadline): the caller's
	// patience. A call still waiting then counts as failed.
	CallTimeout time.Duration
	// SampleEvery is how often the stack's concurrency limit is read.
	SampleEvery time.Duration
	// Progress, when not nil, gets one line per stack and round.
	Progress io.Writer
}

// FullCapacity is docs/performance.md's capacity run: 400 calls/s against
// 64 workers of 50 ms (1,280/s: the load needs 20 in flight) for 10 s, then
// 8 workers (160/s: 2.5× overloaded) for 30 s; 3 rounds of 4 stacks, about
// eight minutes. The phases are long because failsafe-go's adaptive limit
// moves at most once per recent window (1 s by default), by about 1 at
// these sizes.
func FullCapacity() CapacityOptions {
	return CapacityOptions{
		Rounds: 3, Rate: 400, Service: 50 * time.Millisecond,
		High: 64, Low: 8,
		Healthy: 10 * time.Second, Degraded: 30 * time.Second, Settled: 5 * time.Second,
		CallTimeout: 2 * time.Second, SampleEvery: 100 * time.Millisecond,
	}
}

// SmokeCapacity is CI's capacity run: one round, under a second per stack,
// overloaded after the drop (500 calls/s against 8 workers of 20 ms) so that
// every path runs. Its numbers mean nothing.
func SmokeCapacity() CapacityOptions {
	o := FullCapacity()
	o.Rounds, o.Rate, o.Service = 1, 500, 20*time.Millisecond
	o.Healthy, o.Degraded, o.Settled = 300*time.Millisecond, 400*time.Millisecond, 200*time.Millisecond
	o.CallTimeout, o.SampleEvery = 2*time.Second, 50*time.Millisecond
	return o
}

// CapacityRow is one stack's results: medians over the rounds.
type CapacityRow struct {
	Stack string
	// Skipped says why the stack did not run; "" when it did.
	Skipped string
	// Healthy, Degraded and Settled are the phases' figures: the calls
	// launched during the phase (Settled: during the last Settled of the
	// degraded phase).
	Healthy, Degraded, Settled Phase
	// Path is the stack's concurrency limit every SampleEvery from the
	// start: the median over the rounds of each sample.
	Path []int
	// Rounds holds every round's figures, in the order they ran.
	Rounds []CapacityRound
}

// CapacityRound is one run of one stack.
type CapacityRound struct {
	Healthy, Degraded, Settled Phase
	Path                       []int
	// BackendRequests and Abandoned are what the backend saw: requests
	// that arrived, and those whose client left while they queued.
	BackendRequests, Abandoned int
}

// Phase is what the calls launched in one phase got.
type Phase struct {
	// Calls were launched; OK were answered 200 in time; Refused were
	// turned away by the stack's limit (local back-pressure, no request
	// sent); Failed is the rest (the caller's deadline, mostly).
	Calls, OK, Refused, Failed int
	// Goodput is the calls that ended OK during the phase (whenever they
	// were launched) per second of the phase.
	Goodput float64
	// P50 and P99 are the latencies of the OK calls, from the time each
	// was due to be launched (so that a late launch counts against it);
	// -1 for none.
	P50, P99 time.Duration
}

// capCall is one call of the capacity scenario.
type capCall struct {
	start, end time.Duration
	ok         bool
	refused    bool
}

// RunCapacity runs the capacity scenario for every selected stack and
// returns one CapacityRow per stack in the order of CapacityNames(). Each
// run gets a fresh Backend and a fresh stack. It talks only to its own
// loopback servers and returns once every call has ended.
func RunCapacity(ctx context.Context, o CapacityOptions) ([]CapacityRow, error) {
	names := selected(CapacityNames(), o.Stacks)
	rows := make([]CapacityRow, len(names))
	for i, name := range names {
		rows[i].Stack = name
	}
	err := interleaved(ctx, o.Rounds, names, func(i int, why string) { rows[i].Skipped = why },
		func(r, i int, s LimitStack) {
			row := &rows[i]
			start := time.Now()
			round := runCapacity(ctx, o, s)
			row.Rounds = append(row.Rounds, round)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "capacity round %d %-24s %5.1fs  goodput %.0f/s → %.0f/s, p99 %s → %s\n",
					r+1, row.Stack, time.Since(start).Seconds(), round.Healthy.Goodput, round.Degraded.Goodput, ms(round.Healthy.P99), ms(round.Degraded.P99))
			}
		})
	if err != nil {
		return rows, err
	}
	for i := range rows {
		rows[i].summarize()
	}
	return rows, nil
}

// runCapacity is one run of stack s: the open loop over both phases, the
// limit sampled alongside.
func runCapacity(ctx context.Context, o CapacityOptions, s LimitStack) CapacityRound {
	b := NewBackend(o.High, o.Service)
	defer b.Close()
	total := o.Healthy + o.Degraded
	var (
		mu    sync.Mutex
		calls []capCall
		wg    sync.WaitGroup
		path  []int
	)
	t0 := time.Now()
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() { // the limit, every SampleEvery until the load ends
		defer close(sampled)
		tick := time.NewTicker(o.SampleEvery)
		defer tick.Stop()
		for n := 0; ; n++ {
			path = append(path, s.Limit())
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	dropped := false
	for n := 0; ctx.Err() == nil; n++ {
		// Call n is due at n/Rate; a late loop catches up at once.
		due := time.Duration(float64(n) / o.Rate * float64(time.Second))
		if due >= total {
			break
		}
		if d := due - time.Since(t0); d > 0 {
			time.Sleep(d)
		}
		if !dropped && due >= o.Healthy {
			b.SetWorkers(o.Low)
			dropped = true
		}
		wg.Go(func() {
			c := capacityCall(ctx, o, s, b.URL, t0, due)
			mu.Lock()
			calls = append(calls, c)
			mu.Unlock()
		})
	}
	close(stop)
	wg.Wait()
	<-sampled
	round := CapacityRound{
		Healthy:  phase(calls, 0, o.Healthy),
		Degraded: phase(calls, o.Healthy, total),
		Settled:  phase(calls, total-o.Settled, total),
		Path:     path,
	}
	round.BackendRequests = b.Requests()
	_, round.Abandoned, _ = b.Counts()
	return round
}

// capacityCall makes one call launched at start (its scheduled time,
// relative to t0, so that a late launch counts against the latency).
func capacityCall(ctx context.Context, o CapacityOptions, s LimitStack, url string, t0 time.Time, start time.Duration) capCall {
	c := capCall{start: start}
	ctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		panic(err) // a constant URL of our own server
	}
	resp, err := s.Doer.Do(req)
	if err == nil {
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.ok = rerr == nil && resp.StatusCode == http.StatusOK && string(body) == okBody
	}
	c.refused = errors.Is(err, middleware.ErrBulkheadFull) || errors.Is(err, adaptivelimiter.ErrExceeded)
	c.end = time.Since(t0)
	return c
}

// phase sums up the calls launched in [from, to); its goodput counts the
// calls that ended OK in [from, to), whenever they were launched, so that
// it is what the backend delivered in time during the phase and a backlog
// launched late in the phase is not counted as the phase's.
func phase(calls []capCall, from, to time.Duration) Phase {
	var p Phase
	var lat []time.Duration
	done := 0
	for _, c := range calls {
		if c.ok && c.end >= from && c.end < to {
			done++
		}
		if c.start < from || c.start >= to {
			continue
		}
		p.Calls++
		switch {
		case c.ok:
			p.OK++
			lat = append(lat, c.end-c.start)
		case c.refused:
			p.Refused++
		default:
			p.Failed++
		}
	}
	slices.Sort(lat)
	p.Goodput = float64(done) / (to - from).Seconds()
	p.P50, p.P99 = percentile(lat, 0.5), percentile(lat, 0.99)
	return p
}

// summarize sets the row's figures to the medians of its rounds.
func (row *CapacityRow) summarize() {
	if len(row.Rounds) == 0 {
		return
	}
	pick := func(f func(CapacityRound) Phase) Phase {
		ps := make([]Phase, len(row.Rounds))
		for i, r := range row.Rounds {
			ps[i] = f(r)
		}
		return medianPhase(ps)
	}
	row.Healthy = pick(func(r CapacityRound) Phase { return r.Healthy })
	row.Degraded = pick(func(r CapacityRound) Phase { return r.Degraded })
	row.Settled = pick(func(r CapacityRound) Phase { return r.Settled })
	n := len(row.Rounds[0].Path)
	for _, r := range row.Rounds {
		n = min(n, len(r.Path))
	}
	row.Path = make([]int, n)
	for i := range n {
		vs := make([]int, len(row.Rounds))
		for k, r := range row.Rounds {
			vs[k] = r.Path[i]
		}
		row.Path[i] = medianOf(vs)
	}
}

// medianPhase returns each figure's median over ps (the lower middle for an
// even count), figure by figure.
func medianPhase(ps []Phase) Phase {
	each := func(f func(Phase) int) int {
		vs := make([]int, len(ps))
		for i, p := range ps {
			vs[i] = f(p)
		}
		return medianOf(vs)
	}
	goodputs := make([]int, len(ps))
	for i, p := range ps {
		goodputs[i] = int(p.Goodput * 1000)
	}
	return Phase{
		Calls:   each(func(p Phase) int { return p.Calls }),
		OK:      each(func(p Phase) int { return p.OK }),
		Refused: each(func(p Phase) int { return p.Refused }),
		Failed:  each(func(p Phase) int { return p.Failed }),
		Goodput: float64(medianOf(goodputs)) / 1000,
		P50:     time.Duration(each(func(p Phase) int { return int(p.P50) })),
		P99:     time.Duration(each(func(p Phase) int { return int(p.P99) })),
	}
}

// medianOf returns the median of vs (the lower middle for an even count);
// it sorts vs.
func medianOf(vs []int) int {
	slices.Sort(vs)
	return vs[(len(vs)-1)/2]
}
