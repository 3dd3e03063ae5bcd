// Command scenarios runs the scenario harness (package scenario) for every
// stack and prints its table: 20 % transient 503s, a heavy tail, a backend
// hard down for 5s under steady load, and the recovery after it. It talks
// only to its own loopback servers and ends by itself, in about two
// minutes on 2 cores:
//
//	cd benchmarks
//	go run ./cmd/scenarios                      # docs/performance.md's run
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
	flag.Parse()

	o := scenario.Full()
	if *smoke {
		o = scenario.Smoke()
	}
	if *stacks != "" {
		o.Stacks = strings.Split(*stacks, ",")
	}
	if *seed != 0 {
		o.Seed = *seed
	}
	o.Progress = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	rows, err := scenario.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(1)
	}
	fmt.Printf("%s, %s/%s, %d CPUs (GOMAXPROCS %d)%s; run took %.0fs\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), loadavg(), time.Since(start).Seconds())
	fmt.Println(scenario.Describe(o))
	fmt.Println()
	if err := scenario.WriteTable(os.Stdout, o, rows); err != nil {
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
