package scenario_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/benchmarks/scenario"
)

// TestScenarioSmoke runs the whole harness with Smoke's tiny counts and
// checks its structure, never its numbers (CI's machine is shared and
// loaded): a row per stack in order, each stack measured or skipped with a
// reason, counts that add up, percentiles in order, and the one count that
// is exact whatever the load: bare sends one attempt per call.
func TestScenarioSmoke(t *testing.T) {
	o := scenario.Smoke()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rows, err := scenario.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Stack)
	}
	if want := scenario.Names(); !slices.Equal(got, want) {
		t.Fatalf("rows: got %v, want %v", got, want)
	}
	for _, r := range rows {
		t.Run(r.Stack, func(t *testing.T) {
			if r.Skipped != "" { // every stack runs: the build has hedging
				t.Fatalf("skipped: %s", r.Skipped)
			}
			if r.Transient.Calls != o.TransientCalls || r.Tail.Calls != o.TailCalls {
				t.Errorf("calls: got %d transient, %d tail; want %d, %d", r.Transient.Calls, r.Tail.Calls, o.TransientCalls, o.TailCalls)
			}
			if r.Transient.OK > r.Transient.Calls || r.Tail.OK > r.Tail.Calls || r.Outage.OK > r.Outage.Calls {
				t.Errorf("more successes than calls: %+v", r)
			}
			if r.Outage.Calls == 0 {
				t.Errorf("outage: no call started while the backend was down")
			}
			if h := r.Tail; h.P50 < 0 || h.P50 > h.P99 || h.P99 > h.P999 || h.P999 > h.Max {
				t.Errorf("tail percentiles out of order: p50 %v, p99 %v, p99.9 %v, max %v", h.P50, h.P99, h.P999, h.Max)
			}
			// A call makes at least one attempt, except where a
			// breaker rejects it without one.
			if r.Transient.Attempts < 1 || r.Tail.Attempts < 1 {
				t.Errorf("attempts per call: got %.2f transient, %.2f tail; want >= 1", r.Transient.Attempts, r.Tail.Attempts)
			}
			if r.Stack == scenario.NameBare {
				if r.Transient.Attempts != 1 || r.Tail.Attempts != 1 || r.Outage.Attempts != 1 {
					t.Errorf("bare attempts per call: got %.2f, %.2f, %.2f; want exactly 1", r.Transient.Attempts, r.Tail.Attempts, r.Outage.Attempts)
				}
			}
		})
	}
	var table strings.Builder
	if err := scenario.WriteTable(&table, o, rows); err != nil {
		t.Fatal(err)
	}
	for _, name := range scenario.Names() {
		if !strings.Contains(table.String(), "| "+name+" |") {
			t.Errorf("table has no row %q:\n%s", name, table.String())
		}
	}
	t.Logf("\n%s", table.String())
}
