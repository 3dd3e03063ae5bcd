package scenario_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/benchmarks"
	"github.com/switchboard-http/switchboard/benchmarks/scenario"
)

// TestScenarioSmokeCapacity runs the capacity scenario with SmokeCapacity's
// tiny phases and checks its structure, never its numbers: a row per stack
// in order, every call counted once in its phase, percentiles in order, a
// limit path sampled through the run, and the static bulkheads' limits
// exactly their max_concurrent.
func TestScenarioSmokeCapacity(t *testing.T) {
	o := scenario.SmokeCapacity()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rows, err := scenario.RunCapacity(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Stack)
	}
	if want := scenario.CapacityNames(); !slices.Equal(got, want) {
		t.Fatalf("rows: got %v, want %v", got, want)
	}
	wantCalls := int(o.Rate * (o.Healthy + o.Degraded).Seconds())
	for _, r := range rows {
		t.Run(r.Stack, func(t *testing.T) {
			if r.Skipped != "" { // every stack runs: the build has the adaptive bulkhead
				t.Fatalf("skipped: %s", r.Skipped)
			}
			if len(r.Rounds) != o.Rounds {
				t.Fatalf("rounds: got %d, want %d", len(r.Rounds), o.Rounds)
			}
			for _, x := range r.Rounds {
				if n := x.Healthy.Calls + x.Degraded.Calls; n != wantCalls {
					t.Errorf("calls launched: got %d, want %d", n, wantCalls)
				}
				if x.Settled.Calls > x.Degraded.Calls {
					t.Errorf("settled calls %d > degraded calls %d", x.Settled.Calls, x.Degraded.Calls)
				}
				for name, p := range map[string]scenario.Phase{"healthy": x.Healthy, "degraded": x.Degraded, "settled": x.Settled} {
					if p.OK+p.Refused+p.Failed != p.Calls {
						t.Errorf("%s: %d OK + %d refused + %d failed != %d calls", name, p.OK, p.Refused, p.Failed, p.Calls)
					}
					if p.OK > 0 && (p.P50 <= 0 || p.P50 > p.P99) {
						t.Errorf("%s: percentiles out of order: p50 %v, p99 %v", name, p.P50, p.P99)
					}
				}
				// Every call that was not refused reached the backend
				// (the backend never fails, so nothing is retried).
				if sent := x.Healthy.Calls + x.Degraded.Calls - x.Healthy.Refused - x.Degraded.Refused; x.BackendRequests != sent {
					t.Errorf("backend requests: got %d, want %d (calls not refused)", x.BackendRequests, sent)
				}
				if len(x.Path) < 2 {
					t.Errorf("limit path: %d samples", len(x.Path))
				}
			}
			want := map[string]int{scenario.NameStatic16: 16, scenario.NameStatic128: 128}[r.Stack]
			for i, l := range r.Path {
				if l < 1 || l > 200 || (want != 0 && l != want) {
					t.Fatalf("limit sample %d: %d (path %v)", i, l, r.Path)
				}
			}
		})
	}
	var table strings.Builder
	if err := scenario.WriteCapacityTable(&table, o, rows, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, name := range scenario.CapacityNames() {
		if !strings.Contains(table.String(), "| "+name+" |") {
			t.Errorf("table has no row %q:\n%s", name, table.String())
		}
	}
	t.Logf("\n%s", table.String())
}

// TestScenarioSmokeCoalesce runs the coalescing scenario with
// SmokeCoalesce's tiny bursts and checks its structure, and the one count
// that is exact whatever the load: without coalescing, every caller's GET
// reaches the backend.
func TestScenarioSmokeCoalesce(t *testing.T) {
	o := scenario.SmokeCoalesce()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rows, err := scenario.RunCoalesce(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Stack)
	}
	if want := scenario.CoalesceNames(); !slices.Equal(got, want) {
		t.Fatalf("rows: got %v, want %v", got, want)
	}
	for _, r := range rows {
		t.Run(r.Stack, func(t *testing.T) {
			if r.Skipped != "" { // every stack runs: the build has coalescing
				t.Fatalf("skipped: %s", r.Skipped)
			}
			if len(r.Bursts) != o.Rounds {
				t.Fatalf("bursts: got %d, want %d", len(r.Bursts), o.Rounds)
			}
			for i, b := range r.Bursts {
				if b.Calls != o.Callers || b.OK != b.Calls {
					t.Errorf("burst %d: %d of %d calls OK, want %d", i, b.OK, b.Calls, o.Callers)
				}
				if b.Requests < 1 || b.Requests > o.Callers {
					t.Errorf("burst %d: %d backend requests, want 1 to %d", i, b.Requests, o.Callers)
				}
				if r.Stack == scenario.NameSwitchboardDefaults && b.Requests != o.Callers {
					t.Errorf("burst %d without coalescing: %d backend requests, want exactly %d", i, b.Requests, o.Callers)
				}
				if b.P50 <= 0 || b.P50 > b.P99 || b.P99 > b.Wall {
					t.Errorf("burst %d: latencies out of order: p50 %v, p99 %v, last %v", i, b.P50, b.P99, b.Wall)
				}
			}
		})
	}
	var table strings.Builder
	if err := scenario.WriteCoalesceTable(&table, o, rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
}

// TestBackendQueues checks the capacity model: with 2 workers, 6 requests
// sent at once are served at most 2 at a time, every one of them answered,
// and lowering the workers to 1 admits no new request until fewer than 1
// are busy.
func TestBackendQueues(t *testing.T) {
	b := scenario.NewBackend(2, 20*time.Millisecond)
	defer b.Close()
	stack := benchmarks.Bare(nil)
	defer stack.Close()
	send := func(n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				req, err := httpGet(t.Context(), b.URL)
				if err != nil {
					t.Error(err)
					return
				}
				if err := benchmarks.Call(stack.Doer, req, 200); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	send(6)
	served, abandoned, maxBusy := b.Counts()
	if served != 6 || abandoned != 0 || maxBusy != 2 || b.Requests() != 6 {
		t.Fatalf("2 workers: served %d, abandoned %d, most busy %d, requests %d; want 6, 0, 2, 6", served, abandoned, maxBusy, b.Requests())
	}
	b2 := scenario.NewBackend(2, 20*time.Millisecond)
	defer b2.Close()
	b2.SetWorkers(1)
	b = b2
	send(4)
	if served, _, maxBusy := b2.Counts(); served != 4 || maxBusy != 1 {
		t.Fatalf("1 worker: served %d, most busy %d; want 4, 1", served, maxBusy)
	}
}
