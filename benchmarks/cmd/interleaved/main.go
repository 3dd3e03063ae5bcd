// Command interleaved compares the cost of every stack of the comparison
// with a bare *http.Client in interleaved rounds: each round runs one
// sample of every stack, in an order rotated by one stack per round, and
// each stack's figure is the median over the rounds of its sample's time
// divided by the bare client's sample of the same round, for wall time and
// for the process's CPU time, beside its allocations per call. On a shared
// machine this is the figure to trust; `go test -bench -count N` runs all
// samples of one stack back to back, so a burst of load lands on one stack.
//
//	cd benchmarks
//	go run ./cmd/interleaved                          # docs/performance.md's run
//	go run ./cmd/interleaved -modes memory -rounds 31
//	go run ./cmd/interleaved -stacks bare,switchboard-defaults
//
// Modes: memory (a GET answered 200 by an in-memory RoundTripper: each
// stack's own cost, allocations exact), loopback (a GET to an HTTP/1.1
// server on 127.0.0.1, connections kept alive; its CPU time includes the
// server's, the same for every stack), and the same two with -parallel
// (GOMAXPROCS goroutines per sample) as memory-parallel and
// loopback-parallel.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/benchmarks"
)

func main() {
	rounds := flag.Int("rounds", 21, "measured rounds (a warm-up round runs first)")
	memCalls := flag.Int("mem-calls", 5000, "calls per sample in memory")
	loopCalls := flag.Int("loop-calls", 400, "calls per sample on loopback")
	modes := flag.String("modes", "memory,loopback", "comma-separated modes: memory, loopback, memory-parallel, loopback-parallel")
	stacks := flag.String("stacks", "", "comma-separated stacks to run (bare is always run); empty = all")
	flag.Parse()
	if err := run(os.Stdout, *rounds, *memCalls, *loopCalls, strings.Split(*modes, ","), *stacks); err != nil {
		fmt.Fprintln(os.Stderr, "interleaved:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, rounds, memCalls, loopCalls int, modes []string, only string) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	fmt.Fprintf(out, "%s, %s/%s, %d CPUs (GOMAXPROCS %d)%s; %d rounds\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), loadavg(), rounds)
	for _, mode := range modes {
		mode = strings.TrimSpace(mode)
		var (
			base  http.RoundTripper
			url   string
			calls int
		)
		switch strings.TrimSuffix(mode, "-parallel") {
		case "memory":
			base, url, calls = benchmarks.OK{}, "http://svc.test/v1/items", memCalls
		case "loopback":
			url, calls = srv.URL+"/v1/items", loopCalls
		default:
			return fmt.Errorf("unknown mode %q", mode)
		}
		all, err := benchmarks.Stacks(base)
		if err != nil {
			return err
		}
		var picked []benchmarks.Stack
		for _, s := range all {
			if only == "" || s.Name == benchmarks.NameBare || slices.Contains(strings.Split(only, ","), s.Name) {
				picked = append(picked, s)
			}
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		iv := benchmarks.Interleaving{
			Rounds: rounds, Calls: calls, Parallel: strings.HasSuffix(mode, "-parallel"),
			NewRequest: func() *http.Request { return req }, Want: http.StatusOK,
		}
		start := time.Now()
		res, err := iv.Run(picked)
		for _, s := range all {
			s.Close()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		fmt.Fprintf(out, "\n%s, %d calls per sample, %.0fs:\n\n", mode, calls, time.Since(start).Seconds())
		write(out, res)
	}
	return nil
}

// write prints res as a Markdown table.
func write(out io.Writer, res []benchmarks.Result) {
	fmt.Fprintln(out, "| stack | wall/call | CPU/call | wall ÷ bare (IQR) | CPU ÷ bare | allocs/call | over bare |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, r := range res {
		fmt.Fprintf(out, "| %s | %s | %s | %.3f (%.3f–%.3f) | %.3f | %.2f | %+.2f |\n",
			r.Stack, dur(r.WallPerCall), dur(r.CPUPerCall), r.WallRatio, r.WallLow, r.WallHigh, r.CPURatio, r.Allocs, r.AllocsOverBare)
	}
}

// dur prints d in ns under 10 µs, else in µs with one decimal.
func dur(d time.Duration) string {
	if d < 10*time.Microsecond {
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	}
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}

// loadavg returns ", load average a b c" from /proc/loadavg, or "".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return ", load average " + strings.Join(f[:3], " ")
}
