// Command fleet runs three processes that share one vendor quota through a
// real Redis: each tries 200 requests a second for 5 seconds against one
// backend, the quota allows 50 a second with a burst of 5, and the backend
// counts what arrives: about 255, whatever the split between processes.
//
//	cd quotas/redis && go run ./examples/fleet             # starts its own redis-server
//	cd quotas/redis && go run ./examples/fleet -redis 127.0.0.1:6379
//
// Each process is this program again (FLEET_MEMBER set), with the config
// below: scope fleet on a factory.Registry whose Options.Quotas is a
// redisquota.Store. Its store_timeout (1s) is generous: a decision on
// loopback takes well under a millisecond, but this also runs under the
// race detector on loaded CI machines, where a tight one would hand slow
// decisions to the local fallback, whose admits add to the fleet's.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/middleware"
	redisquota "github.com/switchboard-http/switchboard/quotas/redis"
	"github.com/switchboard-http/switchboard/quotas/redis/internal/redisserver"
)

// config is every process's clients.yaml.
const config = `
clients:
  vendor:
    retry: {max_retries: 0}
    rate_limit:
      requests_per_second: 50
      burst: 5
      scope: fleet
      store_timeout: 1s
      on_store_error: local
      fallback_per_second: 10
`

// The quota and the load.
const (
	processes = 3
	perSecond = 200
	runFor    = 5 * time.Second
	rate      = 50
	burst     = 5
)

// The environment of a member process.
const (
	memberEnv = "FLEET_MEMBER" // its number
	fileEnv   = "FLEET_CONFIG"
	redisEnv  = "FLEET_REDIS"
	urlEnv    = "FLEET_URL"
	startEnv  = "FLEET_START" // unix nanoseconds
)

func main() {
	if os.Getenv(memberEnv) != "" {
		if err := member(os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	addr := flag.String("redis", "", "Redis address; empty starts a redis-server on a free loopback port")
	flag.Parse()
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	if err := run(os.Stdout, self, *addr); err != nil {
		log.Fatal(err)
	}
}

// counts is what one member saw: calls answered, refused by the rate
// limit (none is expected: the calls have no deadline), still waiting for
// a token when the run ended (cancelled), failed otherwise.
type counts struct{ Admitted, Refused, Cancelled, Failed int64 }

// run starts Redis (unless addr is set), a backend and three members (the
// program self), and reports what the backend admitted.
func run(w io.Writer, self, addr string) error {
	if addr == "" {
		srv, err := redisserver.Start()
		if err != nil {
			return err
		}
		defer srv.Close()
		addr = srv.Addr
	}
	start := time.Now().Add(2 * time.Second) // time for the members to start
	var arrived atomic.Int64                 // within the 5s from start
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if since := time.Since(start); since >= 0 && since < runFor {
			arrived.Add(1)
		}
	}))
	defer backend.Close()
	dir, err := os.MkdirTemp("", "fleet")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "clients.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(w, "quota: %d/s, burst %d, scope fleet on Redis %s; %d processes each trying %d/s for %v\n",
		rate, burst, addr, processes, perSecond, runFor)
	results := make([]counts, processes)
	errs := make([]error, processes)
	var wg sync.WaitGroup
	for i := range processes {
		wg.Go(func() {
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), memberEnv+"="+strconv.Itoa(i+1), fileEnv+"="+file, redisEnv+"="+addr,
				urlEnv+"="+backend.URL, startEnv+"="+strconv.FormatInt(start.UnixNano(), 10))
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err == nil {
				err = json.Unmarshal(out, &results[i])
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, c := range results {
		fmt.Fprintf(w, "process %d: admitted %d, refused %d, still waiting at the end %d, failed %d\n",
			i+1, c.Admitted, c.Refused, c.Cancelled, c.Failed)
	}
	want := burst + rate*runFor.Seconds()
	got := arrived.Load()
	fmt.Fprintf(w, "the backend admitted %d in %v: %.0f%% of the quota's %.0f (burst + rate × time)\n",
		got, runFor, 100*float64(got)/want, want)
	return nil
}

// member is one process of the fleet: it opens the registry, waits for
// the common start and drives client "vendor", printing its counts as
// JSON.
//
// Its calls wait for their token without a deadline of their own (the
// client's 30s timeout is far off), and the ones still waiting when the
// run ends are cancelled. With a short deadline the count would measure
// the machine as much as the quota: 600 calls a second queue for 50
// tokens, so the calls at the head of each process's queue are the
// oldest, admitted in the last moments of their deadline, and on a loaded
// machine some then miss the backend with their token spent (the same
// holds for a process-scope limiter; see docs/quotas.md).
func member(w io.Writer) error {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(redisEnv),
		ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1, PoolSize: 1000})
	defer rdb.Close()
	reg, err := factory.Open(context.Background(), factory.Options{File: os.Getenv(fileEnv), NoWatch: true,
		Quotas: redisquota.New(rdb, redisquota.Options{})})
	if err != nil {
		return err
	}
	defer reg.Close()
	client, url := reg.Get("vendor"), os.Getenv(urlEnv)
	ns, _ := strconv.ParseInt(os.Getenv(startEnv), 10, 64)
	start := time.Unix(0, ns)
	time.Sleep(time.Until(start))

	ctx, cancel := context.WithCancel(context.Background())
	var c counts
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / perSecond)
	defer tick.Stop()
	for now := range tick.C {
		if now.Sub(start) >= runFor {
			break
		}
		wg.Go(func() { // one call: waits for its token until the run ends
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := client.Do(req)
			switch {
			case err == nil:
				resp.Body.Close()
				atomic.AddInt64(&c.Admitted, 1)
			case errors.Is(err, middleware.ErrRateLimited):
				atomic.AddInt64(&c.Refused, 1)
			case errors.Is(err, context.Canceled):
				atomic.AddInt64(&c.Cancelled, 1)
			default:
				atomic.AddInt64(&c.Failed, 1)
			}
		})
	}
	cancel()
	wg.Wait()
	return json.NewEncoder(w).Encode(c)
}
