package scenario

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// CoalesceOptions sizes the coalescing scenario: bursts of Callers
// identical GETs released at once (a cache miss in every goroutine of a
// service) against a Backend of Workers workers of Service each. Each
// stack runs one burst per round, Rounds rounds, in an order rotated by one
// stack per round.
type CoalesceOptions struct {
	// Stacks selects stacks by name; nil means all of CoalesceNames().
	Stacks []string
	// Rounds is the number of bursts per stack; zero means 1.
	Rounds int
	// Callers is the number of identical GETs in one burst.
	Callers int
	// Workers and Service are the backend's capacity.
	Workers int
	Service time.Duration
	// CallTimeout bounds each call (a context deadline).
	CallTimeout time.Duration
	// Progress, when not nil, gets one line per stack and round.
	Progress io.Writer
}

// FullCoalesce is docs/performance.md's coalescing run: 21 bursts of 200
// GETs per stack against the capacity scenario's healthy backend (64
// workers of 50 ms).
func FullCoalesce() CoalesceOptions {
	return CoalesceOptions{Rounds: 21, Callers: 200, Workers: 64, Service: 50 * time.Millisecond, CallTimeout: 10 * time.Second}
}

// SmokeCoalesce is CI's coalescing run: two bursts of 50 per stack, a
// 5 ms backend. Its numbers mean nothing.
func SmokeCoalesce() CoalesceOptions {
	o := FullCoalesce()
	o.Rounds, o.Callers, o.Service = 2, 50, 5*time.Millisecond
	return o
}

// CoalesceRow is one stack's results over its bursts.
type CoalesceRow struct {
	Stack string
	// Skipped says why the stack did not run; "" when it did.
	Skipped string
	// Bursts holds every burst's figures, in the order they ran.
	Bursts []Burst
	// Requests is the median of the bursts' backend requests, MinRequests
	// and MaxRequests their range.
	Requests, MinRequests, MaxRequests int
	// Wall is the median time from a burst's release until its last
	// caller had read its answer; P50 and P99 are the medians over the
	// bursts of the callers' latency percentiles.
	Wall, P50, P99 time.Duration
}

// Burst is one burst of one stack.
type Burst struct {
	// Calls were made; OK were answered 200 with the whole body.
	Calls, OK int
	// Requests is how many requests reached the backend.
	Requests int
	Wall     time.Duration
	P50, P99 time.Duration
}

// RunCoalesce runs the coalescing scenario for every selected stack and
// returns one CoalesceRow per stack in the order of CoalesceNames(). Each
// burst gets a fresh Backend and a fresh stack (so that no connection or
// cached state carries over). It talks only to its own loopback servers and
// returns once every call has ended.
func RunCoalesce(ctx context.Context, o CoalesceOptions) ([]CoalesceRow, error) {
	names := selected(CoalesceNames(), o.Stacks)
	rows := make([]CoalesceRow, len(names))
	for i, name := range names {
		rows[i].Stack = name
	}
	err := interleaved(ctx, o.Rounds, names, func(i int, why string) { rows[i].Skipped = why },
		func(r, i int, s LimitStack) {
			row := &rows[i]
			b := burst(ctx, o, s)
			row.Bursts = append(row.Bursts, b)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "coalesce round %d %-22s %d backend requests, %d/%d OK, %s\n", r+1, row.Stack, b.Requests, b.OK, b.Calls, ms(b.Wall))
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

// burst releases o.Callers identical GETs through s at once, once they are
// all ready to send, and waits for every one to read its answer.
func burst(ctx context.Context, o CoalesceOptions, s LimitStack) Burst {
	b := NewBackend(o.Workers, o.Service)
	defer b.Close()
	var (
		ready, wg sync.WaitGroup
		release   = make(chan struct{})
		lat       = make([]time.Duration, o.Callers)
		ok        = make([]bool, o.Callers)
		t0        time.Time
	)
	ready.Add(o.Callers)
	for i := range o.Callers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL+"/v1/items/42", nil)
			if err != nil {
				panic(err) // a constant URL of our own server
			}
			ready.Done()
			<-release
			resp, err := s.Doer.Do(req)
			if err == nil {
				body, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				ok[i] = rerr == nil && resp.StatusCode == http.StatusOK && string(body) == okBody
			}
			lat[i] = time.Since(t0)
		})
	}
	ready.Wait()
	t0 = time.Now()
	close(release)
	wg.Wait()
	out := Burst{Calls: o.Callers, Requests: b.Requests()}
	for i := range ok {
		if ok[i] {
			out.OK++
		}
	}
	slices.Sort(lat)
	out.Wall = lat[len(lat)-1]
	out.P50, out.P99 = percentile(lat, 0.5), percentile(lat, 0.99)
	return out
}

// summarize sets the row's figures from its bursts.
func (row *CoalesceRow) summarize() {
	if len(row.Bursts) == 0 {
		return
	}
	each := func(f func(Burst) int) []int {
		vs := make([]int, len(row.Bursts))
		for i, b := range row.Bursts {
			vs[i] = f(b)
		}
		slices.Sort(vs)
		return vs
	}
	req := each(func(b Burst) int { return b.Requests })
	row.Requests, row.MinRequests, row.MaxRequests = medianOf(req), req[0], req[len(req)-1]
	row.Wall = time.Duration(medianOf(each(func(b Burst) int { return int(b.Wall) })))
	row.P50 = time.Duration(medianOf(each(func(b Burst) int { return int(b.P50) })))
	row.P99 = time.Duration(medianOf(each(func(b Burst) int { return int(b.P99) })))
}
