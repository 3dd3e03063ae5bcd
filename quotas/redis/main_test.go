package redisquota_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/factory"
	redisquota "github.com/switchboard-http/switchboard/quotas/redis"
	"github.com/switchboard-http/switchboard/quotas/redis/internal/redisserver"
)

// TestMain runs the tests, or, when this binary was re-executed as one
// process of a fleet (childEnv set), that process: see runChild.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	// go-redis logs every failed dial; the outage tests cause many.
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// startRedis starts a real redis-server for t and stops it (by PID) when
// t ends. A missing redis-server fails the test: .ci/run installs it.
func startRedis(t testing.TB) *redisserver.Server {
	t.Helper()
	s, err := redisserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// newClient returns a go-redis client of addr, closed when t ends, set as
// docs/quotas.md advises (clientOptions).
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(clientOptions(addr))
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// clientOptions are go-redis options for a quota store, as docs/quotas.md
// advises: ContextTimeoutEnabled (without it go-redis ignores the
// context's deadline on a hung connection, and store_timeout cannot
// bound a decision), no command retries and one dial per attempt (a failed decision
// fails fast and on_store_error applies, rather than spending all of
// store_timeout on retries), and a PoolSize above the decisions in flight
// during an outage, so that go-redis dials on each decision rather than
// once a second (its dial short-circuit): a restarted Redis serves the
// next decision.
func clientOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1, PoolSize: 1000}
}

// The environment of a child process (one member of a fleet).
const (
	childEnv  = "REDISQUOTA_TEST_CHILD" // the child's id, "1", "2", ...
	configEnv = "REDISQUOTA_TEST_CONFIG"
	redisEnv  = "REDISQUOTA_TEST_REDIS"
	urlEnv    = "REDISQUOTA_TEST_URL"
	startEnv  = "REDISQUOTA_TEST_START" // unix nanoseconds to start at
	forEnv    = "REDISQUOTA_TEST_FOR"   // how long to send
	rateEnv   = "REDISQUOTA_TEST_RATE"  // attempts per second
)

// tally is what a driver saw: calls admitted (answered by the backend),
// refused (ErrRateLimited) and failed otherwise.
type tally struct {
	Admitted, Refused, Failed int64
	// MaxRefusal is the longest a refused call took.
	MaxRefusal time.Duration
	// FirstFailure is the error of a call that failed otherwise.
	FirstFailure string `json:",omitempty"`
}

// drive sends GETs to url through c at perSecond, each with deadline, from start for dur, each in its own goroutine (a load
// generator, not the library), with header X-Proc id and, if tenant is
// not "", X-Tenant-ID tenant.
func drive(c *http.Client, url, id, tenant string, perSecond float64, deadline time.Duration, start time.Time, dur time.Duration) tally {
	time.Sleep(time.Until(start))
	var t tally
	var firstFailure sync.Once
	var maxRefusal atomic.Int64
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer tick.Stop()
	end := start.Add(dur)
	var wg sync.WaitGroup
	for now := range tick.C {
		if !now.Before(end) {
			break
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("X-Proc", id)
			if tenant != "" {
				req.Header.Set("X-Tenant-ID", tenant)
			}
			began := time.Now()
			resp, err := c.Do(req)
			switch {
			case err == nil:
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				atomic.AddInt64(&t.Admitted, 1)
			case isRateLimited(err):
				atomic.AddInt64(&t.Refused, 1)
				took := int64(time.Since(began))
				for cur := maxRefusal.Load(); took > cur && !maxRefusal.CompareAndSwap(cur, took); cur = maxRefusal.Load() {
				}
			default:
				atomic.AddInt64(&t.Failed, 1)
				firstFailure.Do(func() { t.FirstFailure = err.Error() })
			}
		})
	}
	wg.Wait()
	t.MaxRefusal = time.Duration(maxRefusal.Load())
	return t
}

// runChild is one process of a fleet: it opens the registry of the config
// file in configEnv with a redisquota store on redisEnv, drives client
// "vendor" and prints its tally as JSON.
func runChild() int {
	id := os.Getenv(childEnv)
	rdb := redis.NewClient(clientOptions(os.Getenv(redisEnv)))
	defer rdb.Close()
	reg, err := factory.Open(context.Background(), factory.Options{File: os.Getenv(configEnv), NoWatch: true,
		Quotas: redisquota.New(rdb, redisquota.Options{})})
	if err != nil {
		log.Print(err)
		return 2
	}
	defer reg.Close()
	startNs, _ := strconv.ParseInt(os.Getenv(startEnv), 10, 64)
	dur, _ := time.ParseDuration(os.Getenv(forEnv))
	rate, _ := strconv.ParseFloat(os.Getenv(rateEnv), 64)
	t := drive(reg.Get("vendor"), os.Getenv(urlEnv), id, "", rate, 50*time.Millisecond, time.Unix(0, startNs), dur)
	if err := json.NewEncoder(os.Stdout).Encode(t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}
