package factory_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
)

// allLayers is a client with every layer on except the total timeout: retry
// and its budget, a consecutive breaker, a bulkhead and a rate limit too
// large to bind; logging stays at debug, and the registries below log to a
// discarding logger, so the logging layer costs its Enabled check only.
func allLayers() config.ClientConfig {
	c := config.Default()
	c.Timeout = 0
	c.Retry.InitialBackoff = time.Microsecond
	c.Retry.MaxBackoff = time.Millisecond
	c.CircuitBreaker.Enabled = true
	c.Bulkhead.MaxConcurrent = 1 << 20
	c.RateLimit.RequestsPerSecond = 1e9
	c.RateLimit.Burst = 1 << 20
	return c
}

// manyClients returns a config of n clients named client-0000…, each the
// built-in defaults with its own User-Agent header.
func manyClients(n int) config.Config {
	cfg := config.Config{Defaults: config.Default(), Clients: make(map[string]config.ClientConfig, n)}
	for i := range n {
		c := config.Default()
		c.Headers["User-Agent"] = fmt.Sprintf("bench/%d", i)
		cfg.Clients[clientName(i)] = c
	}
	return cfg
}

func clientName(i int) string { return fmt.Sprintf("client-%04d", i) }

// withRetries returns a copy of cfg whose named clients (all when names is
// empty) have retry.max_retries set to n.
func withRetries(cfg config.Config, n int, names ...string) config.Config {
	out := cfg
	out.Clients = make(map[string]config.ClientConfig, len(cfg.Clients))
	for name, c := range cfg.Clients {
		out.Clients[name] = c
	}
	if len(names) == 0 {
		for name := range cfg.Clients {
			names = append(names, name)
		}
	}
	for _, name := range names {
		c := out.Clients[name]
		c.Retry.MaxRetries = n
		out.Clients[name] = c
	}
	return out
}

// reloading calls Apply in a loop, alternating between two configs that
// change every client, until the returned stop func is called: back to
// back when every is 0, else once per tick of every.
func reloading(b *testing.B, r *factory.Registry, cfg config.Config, every time.Duration) (stop func()) {
	a, c := withRetries(cfg, 2), withRetries(cfg, 4)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var tick <-chan time.Time
		if every > 0 {
			t := time.NewTicker(every)
			defer t.Stop()
			tick = t.C
		}
		for i := 0; ; i++ {
			if tick != nil {
				select {
				case <-done:
					return
				case <-tick:
				}
			} else {
				select {
				case <-done:
					return
				default:
				}
			}
			next := a
			if i%2 == 1 {
				next = c
			}
			if err := r.Apply(next); err != nil {
				b.Error(err)
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// BenchmarkGetDuringReload is BenchmarkGet while another goroutine applies
// a new config (every client changed): back to back ("flat-out"), and once
// a millisecond ("paced", still far more often than any real reload). On a
// machine with few cores the flat-out reloader takes CPU time and GC work
// from the benchmark itself, so read it against BenchmarkGet and "paced".
// B/op counts the reloader's allocations too; allocs/op stays 0.
func BenchmarkGetDuringReload(b *testing.B) {
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}}
	r, err := factory.New(cfg, factory.Options{Base: okTransport, Logger: discard()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	for _, mode := range []struct {
		name  string
		every time.Duration
	}{{"flat-out", 0}, {"paced", time.Millisecond}} {
		b.Run(mode.name+"/serial", func(b *testing.B) {
			stop := reloading(b, r, cfg, mode.every)
			defer stop()
			b.ReportAllocs()
			for b.Loop() {
				if r.Get("billing") == nil {
					b.Fatal("nil client")
				}
			}
		})
		b.Run(mode.name+"/parallel", func(b *testing.B) {
			stop := reloading(b, r, cfg, mode.every)
			defer stop()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if r.Get("billing") == nil {
						b.Error("nil client")
						return
					}
				}
			})
		})
	}
}

// BenchmarkRequestAllLayers is BenchmarkRequest's in-memory GET through the
// full pipeline with every layer on except the total timeout (allLayers);
// BenchmarkRequest has the bare and defaults cases to compare it with.
func BenchmarkRequestAllLayers(b *testing.B) {
	cfg := config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": allLayers()}}
	r, err := factory.New(cfg, factory.Options{Base: okTransport, Logger: discard()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	benchClient(b, r.Get("billing"))
}

// BenchmarkApply measures configuration changes of 100 and 1,000 clients:
//
//   - new: factory.New, which validates and builds every pipeline (each
//     with a base transport of its own, built on first use: none here),
//     then Close;
//   - rebuild: Apply of a config that changes every client's retry block, so
//     that every pipeline is rebuilt (transports are kept);
//   - one-changed: Apply of a config that changes one client of 1,000;
//   - unchanged: Apply of an equal config.
//
// Linear means new/1000 and rebuild/1000 cost at most 12× their /100.
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{100, 1000} {
		cfg := manyClients(n)
		b.Run(fmt.Sprintf("new/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := factory.New(cfg, factory.Options{Logger: discard()})
				if err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
		b.Run(fmt.Sprintf("rebuild/%d", n), func(b *testing.B) {
			benchApply(b, cfg, withRetries(cfg, 2), withRetries(cfg, 4))
		})
	}
	cfg := manyClients(1000)
	b.Run("one-changed/1000", func(b *testing.B) {
		one := clientName(500)
		benchApply(b, cfg, withRetries(cfg, 2, one), withRetries(cfg, 4, one))
	})
	b.Run("unchanged/1000", func(b *testing.B) {
		benchApply(b, cfg, cfg, cfg)
	})
}

// benchApply builds a registry from start and applies a and c in turn.
func benchApply(b *testing.B, start, a, c config.Config) {
	r, err := factory.New(start, factory.Options{Logger: discard()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		next := a
		if i%2 == 1 {
			next = c
		}
		i++
		if err := r.Apply(next); err != nil {
			b.Fatal(err)
		}
	}
}

// TestApplyOneClientChangeRebuildsOnePipeline guards the reload cost: a
// config of 1,000 clients in which one client changed rebuilds that
// client's pipeline only (the generation that built each pipeline, as
// Status reports it, shows which were rebuilt), and OnReload names it alone.
func TestApplyOneClientChangeRebuildsOnePipeline(t *testing.T) {
	cfg := manyClients(1000)
	var changed []string
	r, err := factory.New(cfg, factory.Options{Logger: discard(), OnReload: func(e factory.ReloadEvent) { changed = e.Changed }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := r.Status().Generation
	one := clientName(500)
	if err := r.Apply(withRetries(cfg, 5, one)); err != nil {
		t.Fatal(err)
	}
	st := r.Status()
	if st.Generation != before+1 {
		t.Fatalf("generation: got %d, want %d", st.Generation, before+1)
	}
	var rebuilt []string
	for _, c := range st.Clients {
		if c.Generation == st.Generation {
			rebuilt = append(rebuilt, c.Name)
		}
	}
	if len(rebuilt) != 1 || rebuilt[0] != one {
		t.Errorf("rebuilt pipelines: got %d %v, want 1 [%s]", len(rebuilt), firstFew(rebuilt), one)
	}
	if len(changed) != 1 || changed[0] != one {
		t.Errorf("ReloadEvent.Changed: got %d %v, want [%s]", len(changed), firstFew(changed), one)
	}
	if len(st.Clients) != 1000 {
		t.Errorf("clients in status: got %d, want 1000", len(st.Clients))
	}
}

func firstFew(s []string) []string { return s[:min(len(s), 5)] }
