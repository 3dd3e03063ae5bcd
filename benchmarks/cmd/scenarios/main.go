// Command scenarios runs the scenario harness (package scenario) and prints
// its tables. It talks only to its own loopback servers and ends by itself.
// Suites (-suite):
//
//   - faults (the default): every stack against 20 % transient 503s, a
//     heavy tail, a backend hard down for 5s under steady load, and the
//     recovery after it; about two minutes on 2 cores.
//   - capacity: a backend whose capacity drops from 64 to 8 workers mid-run,
//     under an open loop: goodput, p50/p99 and the concurrency limit's path
//     for switchboard's static bulkhead at 16 and 128, its adaptive one, and
//     failsafe-go's adaptivelimiter; interleaved rounds, about eight minutes.
//   - coalesce: bursts of 200 identical GETs with and without coalescing:
//     backend requests per burst and the burst's latency; under a minute.
//
// For example:
//
//	cd benchmarks
//	go run ./cmd/scenarios                      # docs/performance.md's runs
//	go run ./cmd/scenarios -suite capacity
//	go run ./cmd/scenarios -suite coalesce
//	go run ./cmd/scenarios -stacks bare,heimdall -smoke
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	"github.com/switchboard-http/switchboard/benchmarks/scenario"
)

func main() {
	smoke := flag.Bool("smoke", false, "CI's tiny run instead of the full one (its numbers mean nothing)")
	stacks := flag.String("stacks", "", "comma-separated stacks to run; empty = all of "+strings.Join(scenario.Names(), ","))
	seed := flag.Uint64("seed", 0, "seed of the servers' faults; 0 = the default")
	suite := flag.String("suite", "faults", "faults, capacity or coalesce")
	rounds := flag.Int("rounds", 0, "capacity and coalesce: rounds; 0 = the default")
	pathEvery := flag.Duration("path-every", 2*time.Second, "capacity: the limit's path is shown every this long")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var only []string
	if *stacks != "" {
		only = strings.Split(*stacks, ",")
	}
	switch *suite {
	case "faults":
	case "capacity":
		o := scenario.FullCapacity()
		if *smoke {
			o = scenario.SmokeCapacity()
		}
		o.Stacks, o.Progress = only, os.Stderr
		if *rounds > 0 {
			o.Rounds = *rounds
		}
		start := time.Now()
		rows, err := scenario.RunCapacity(ctx, o)
		exitOn(err)
		header(start)
		fmt.Println(scenario.DescribeCapacity(o))
		fmt.Println()
		exitOn(scenario.WriteCapacityTable(os.Stdout, o, rows, *pathEvery))
		return
	case "coalesce":
		o := scenario.FullCoalesce()
		if *smoke {
			o = scenario.SmokeCoalesce()
		}
		o.Stacks, o.Progress = only, os.Stderr
		if *rounds > 0 {
			o.Rounds = *rounds
		}
		start := time.Now()
		rows, err := scenario.RunCoalesce(ctx, o)
		exitOn(err)
		header(start)
		fmt.Println(scenario.DescribeCoalesce(o))
		fmt.Println()
		exitOn(scenario.WriteCoalesceTable(os.Stdout, o, rows))
		return
	default:
		exitOn(fmt.Errorf("unknown suite %q (faults, capacity, coalesce)", *suite))
	}

	o := scenario.Full()
	if *smoke {
		o = scenario.Smoke()
	}
	o.Stacks = only
	if *seed != 0 {
		o.Seed = *seed
	}
	o.Progress = os.Stderr
	start := time.Now()
	rows, err := scenario.Run(ctx, o)
	exitOn(err)
	header(start)
	fmt.Println(scenario.Describe(o))
	fmt.Println()
	exitOn(scenario.WriteTable(os.Stdout, o, rows))
}

// startLoad is the load average when the command started.
var startLoad = loadavg()

// header prints the machine, its load at the start and the end, and how
// long the run took.
func header(start time.Time) {
	fmt.Printf("%s, %s/%s, %d CPUs (GOMAXPROCS %d); at the start%s; at the end%s; run took %.0fs\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), startLoad, loadavg(), time.Since(start).Seconds())
}

// exitOn ends the command with err, if any.
func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(1)
	}
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
