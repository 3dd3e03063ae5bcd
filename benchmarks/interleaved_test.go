package benchmarks_test

import (
	"net/http"
	"testing"

	"github.com/switchboard-http/switchboard/benchmarks"
)

// TestInterleavedSmoke runs the interleaved comparison with tiny counts,
// serially and in parallel, in memory: one Result per stack, in order,
// bare paired with itself, and every stack allocating. It checks structure
// only; `go run ./cmd/interleaved` gives the numbers.
func TestInterleavedSmoke(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		stacks, err := benchmarks.Stacks(benchmarks.OK{})
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodGet, "http://svc.test/v1/items", nil)
		if err != nil {
			t.Fatal(err)
		}
		iv := benchmarks.Interleaving{Rounds: 2, Calls: 20, Parallel: parallel, NewRequest: func() *http.Request { return req }, Want: http.StatusOK}
		res, err := iv.Run(stacks)
		for _, s := range stacks {
			s.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(stacks) {
			t.Fatalf("parallel %v: got %d results for %d stacks", parallel, len(res), len(stacks))
		}
		for i, r := range res {
			if r.Stack != stacks[i].Name {
				t.Errorf("parallel %v: result %d is %q, want %q", parallel, i, r.Stack, stacks[i].Name)
			}
			if r.WallPerCall <= 0 || r.WallRatio <= 0 || r.Allocs <= 0 {
				t.Errorf("parallel %v: %s: empty figures %+v", parallel, r.Stack, r)
			}
			if r.Stack == benchmarks.NameBare && (r.WallRatio != 1 || r.AllocsOverBare != 0) {
				t.Errorf("parallel %v: bare is not paired with itself: %+v", parallel, r)
			}
		}
	}
}
