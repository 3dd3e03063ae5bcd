package benchmarks

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Call sends req through d as a caller does: it reads the body to its end
// and closes it. It returns an error for a failed call or a status other
// than want.
func Call(d Doer, req *http.Request, want int) error {
	resp, err := d.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("unexpected status %s", resp.Status)
	}
	return nil
}

// Interleaving is one interleaved comparison: Rounds rounds, each of which
// runs one sample of every stack, in an order rotated by one stack per
// round, so that a stack's samples are spread over the whole run and each
// has the bare client's sample of the same round beside it. A plain
// `go test -bench -count N` runs all samples of one stack back to back, and
// on a shared machine a burst of load then lands on one stack alone.
type Interleaving struct {
	// Rounds is the number of measured rounds; a warm-up round, not
	// counted, runs before them. Zero means 1.
	Rounds int
	// Calls is the number of logical calls in one sample. Zero means 1.
	Calls int
	// Parallel runs a sample's calls from GOMAXPROCS goroutines instead of
	// one.
	Parallel bool
	// NewRequest returns the request of one call; a GET without a body may
	// be the same request every time.
	NewRequest func() *http.Request
	// Want is the status every call must answer.
	Want int
}

// Sample is what one sample of one stack measured.
type Sample struct {
	// Wall is the sample's elapsed time.
	Wall time.Duration
	// CPU is the process's CPU time (user + system, every thread) over
	// the sample: the loopback server's share included, the same for every
	// stack. Zero where the platform does not report it.
	CPU time.Duration
	// Mallocs is the number of heap allocations during the sample
	// (runtime.MemStats.Mallocs), from every goroutine, less those that
	// measuring an empty sample counts.
	Mallocs uint64
}

// Result is one stack's figures over the rounds of an Interleaving.
type Result struct {
	Stack string
	// WallPerCall and CPUPerCall are the medians over the rounds of the
	// sample's time divided by its calls.
	WallPerCall, CPUPerCall time.Duration
	// WallRatio and CPURatio are the medians over the rounds of the
	// stack's sample time divided by the bare client's in the same round
	// (1 for bare itself; 0 without a bare stack or CPU times).
	WallRatio, CPURatio float64
	// WallLow, WallHigh are the first and third quartiles of the wall
	// ratios: how far to trust WallRatio.
	WallLow, WallHigh float64
	// Allocs is the median over the rounds of allocations per call; in
	// memory, serial, it is exact (nothing else allocates).
	Allocs float64
	// AllocsOverBare is Allocs minus the bare client's.
	AllocsOverBare float64
}

// Run runs the interleaving over stacks and returns one Result per stack,
// in the order of stacks. The stack named NameBare, if any, is the one the
// others are paired with.
func (iv Interleaving) Run(stacks []Stack) ([]Result, error) {
	rounds, calls := max(iv.Rounds, 1), max(iv.Calls, 1)
	samples := make([][]Sample, len(stacks))
	// What measuring allocates by itself, taken off every sample.
	idle, err := iv.sample(nil, 0)
	if err != nil {
		return nil, err
	}
	for r := -1; r < rounds; r++ { // round -1 warms up and is dropped
		for i := range stacks {
			k := (i + max(r, 0)) % len(stacks)
			s, err := iv.sample(stacks[k].Doer, calls)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", stacks[k].Name, err)
			}
			if r >= 0 {
				s.Mallocs -= min(idle.Mallocs, s.Mallocs)
				samples[k] = append(samples[k], s)
			}
		}
	}
	bare := slices.IndexFunc(stacks, func(s Stack) bool { return s.Name == NameBare })
	out := make([]Result, len(stacks))
	for k, ss := range samples {
		res := Result{Stack: stacks[k].Name}
		res.WallPerCall = time.Duration(median(each(ss, func(s Sample) float64 { return float64(s.Wall) / float64(calls) })))
		res.CPUPerCall = time.Duration(median(each(ss, func(s Sample) float64 { return float64(s.CPU) / float64(calls) })))
		res.Allocs = median(each(ss, func(s Sample) float64 { return float64(s.Mallocs) / float64(calls) }))
		if bare >= 0 {
			b := samples[bare]
			walls := make([]float64, len(ss))
			var cpus []float64
			for r, s := range ss {
				walls[r] = float64(s.Wall) / float64(b[r].Wall)
				if s.CPU > 0 && b[r].CPU > 0 {
					cpus = append(cpus, float64(s.CPU)/float64(b[r].CPU))
				}
			}
			slices.Sort(walls)
			res.WallRatio, res.WallLow, res.WallHigh = median(walls), quantile(walls, 0.25), quantile(walls, 0.75)
			res.CPURatio = median(cpus)
		}
		out[k] = res
	}
	if bare >= 0 {
		for k := range out {
			out[k].AllocsOverBare = out[k].Allocs - out[bare].Allocs
		}
	}
	return out, nil
}

// sample runs calls logical calls through d after a GC, so that no stack
// pays for the garbage of the one before it.
func (iv Interleaving) sample(d Doer, calls int) (Sample, error) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := processCPU()
	t0 := time.Now()
	err := iv.calls(d, calls)
	wall := time.Since(t0)
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&m1)
	return Sample{Wall: wall, CPU: cpu, Mallocs: m1.Mallocs - m0.Mallocs}, err
}

// calls runs n calls through d, serially or from GOMAXPROCS goroutines.
func (iv Interleaving) calls(d Doer, n int) error {
	if !iv.Parallel {
		for range n {
			if err := Call(d, iv.NewRequest(), iv.Want); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		left = atomic.Int64{}
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	left.Store(int64(n))
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := Call(d, iv.NewRequest(), iv.Want); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func each(ss []Sample, f func(Sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	slices.Sort(out)
	return out
}

// median returns the median of sorted, 0 for none.
func median(sorted []float64) float64 {
	slices.Sort(sorted)
	return quantile(sorted, 0.5)
}

// quantile returns the q-quantile of sorted by linear interpolation, 0 for
// none.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}
