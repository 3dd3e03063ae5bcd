package promswitchboard_test

import (
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
	promswitchboard "github.com/switchboard-http/switchboard/prometheus"
)

// TestCoalescedCallsCounted: three identical calls in flight share one
// trip: three calls, one attempt, two coalesced.
func TestCoalescedCallsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := promswitchboard.NewMetrics(promswitchboard.Options{})
		opts := factory.Options{Base: fakert.New(fakert.Step{Delay: time.Second}), Logger: slog.New(slog.DiscardHandler)}
		m.Instrument(&opts)
		cc := config.Default()
		cc.Coalesce.Enabled = true
		r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"catalog": cc}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { call(t, r, "catalog", "http://catalog.test/items") })
		}
		wg.Wait()
		preg := prometheus.NewRegistry()
		preg.MustRegister(m)
		got, err := testutil.GatherAndCount(preg, "switchboard_coalesced_total")
		if err != nil || got != 1 {
			t.Fatalf("switchboard_coalesced_total series: %d, %v; want 1", got, err)
		}
		fams, err := preg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]float64{}
		for _, f := range fams {
			for _, s := range f.GetMetric() {
				if s.Counter != nil {
					byName[f.GetName()] += s.Counter.GetValue()
				}
			}
		}
		if byName["switchboard_coalesced_total"] != 2 || byName["switchboard_calls_total"] != 3 || byName["switchboard_attempts_total"] != 1 {
			t.Errorf("coalesced %v, calls %v, attempts %v; want 2, 3, 1",
				byName["switchboard_coalesced_total"], byName["switchboard_calls_total"], byName["switchboard_attempts_total"])
		}
	})
}
