package middleware_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/internal/fakert"
	"github.com/switchboard-http/switchboard/middleware"
)

// withdrawAll withdraws until the budget refuses and returns how many
// withdrawals it allowed (at most limit).
func withdrawAll(b *middleware.Budget, limit int) int {
	n := 0
	for n < limit && b.TryWithdraw() {
		n++
	}
	return n
}

func TestBudgetAllowance(t *testing.T) {
	tests := []struct {
		name     string
		s        middleware.BudgetSettings
		deposits int
		want     int
	}{
		{"reserve only", middleware.BudgetSettings{MinPerSecond: 2, TTL: 5 * time.Second}, 0, 10},
		{"ratio only", middleware.BudgetSettings{Ratio: 0.2, TTL: 10 * time.Second}, 10, 2},
		{"ratio, exact tokens", middleware.BudgetSettings{Ratio: 0.2, TTL: 10 * time.Second}, 5, 1},
		{"ratio, not yet a token", middleware.BudgetSettings{Ratio: 0.2, TTL: 10 * time.Second}, 4, 0},
		{"ratio and reserve", middleware.BudgetSettings{Ratio: 0.5, MinPerSecond: 1, TTL: 3 * time.Second}, 4, 5},
		{"defaults", middleware.BudgetSettings{Ratio: middleware.DefaultBudgetRatio, MinPerSecond: middleware.DefaultBudgetMinPerSec, TTL: middleware.DefaultBudgetTTL}, 100, 120},
		{"zero ratio and reserve allow none", middleware.BudgetSettings{TTL: time.Second}, 100, 0},
		{"negative values count as zero", middleware.BudgetSettings{Ratio: -1, MinPerSecond: -1, TTL: time.Second}, 100, 0},
		{"zero TTL is unlimited", middleware.BudgetSettings{}, 0, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := middleware.NewBudget(tt.s, middleware.BudgetOptions{})
				for range tt.deposits {
					b.Deposit()
				}
				if got := withdrawAll(b, 1000); got != tt.want {
					t.Fatalf("got %d retries, want %d", got, tt.want)
				}
			})
		})
	}
}

func TestBudgetNilAndZeroAreUnlimited(t *testing.T) {
	var nb *middleware.Budget
	nb.Deposit()
	nb.Update(middleware.BudgetSettings{TTL: time.Second})
	if !nb.TryWithdraw() || !math.IsInf(nb.Balance(), 1) {
		t.Fatal("nil budget must allow every retry")
	}
	var zb middleware.Budget
	zb.Deposit()
	if !zb.TryWithdraw() || !math.IsInf(zb.Balance(), 1) {
		t.Fatal("zero budget must allow every retry")
	}
}

func TestBudgetRecoversAfterTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := middleware.NewBudget(middleware.BudgetSettings{Ratio: 0.1, MinPerSecond: 0.5, TTL: 10 * time.Second}, middleware.BudgetOptions{})
		// Sustained failure: 100 calls a second for 3 s, each wanting a retry.
		allowed := 0
		for range 3 {
			for range 100 {
				b.Deposit()
				if b.TryWithdraw() {
					allowed++
				}
			}
			time.Sleep(time.Second)
		}
		// 30 from the ratio (300 × 0.1) and 5 from the reserve.
		if allowed != 35 {
			t.Fatalf("got %d retries allowed, want 35", allowed)
		}
		if got := b.Balance(); got > 1e-6 || got < -1e-6 {
			t.Fatalf("got balance %v, want 0", got)
		}
		time.Sleep(10 * time.Second)
		if got := b.Balance(); got != 5 {
			t.Fatalf("got balance %v after the TTL, want the reserve 5", got)
		}
	})
}

func TestBudgetWindowSlides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := middleware.NewBudget(middleware.BudgetSettings{Ratio: 1, TTL: 10 * time.Second}, middleware.BudgetOptions{})
		b.Deposit() // at 0s
		time.Sleep(5 * time.Second)
		b.Deposit() // at 5s
		if got := b.Balance(); got != 2 {
			t.Fatalf("got %v, want 2", got)
		}
		time.Sleep(5 * time.Second) // 10s: the first deposit has left the window
		if got := b.Balance(); got != 1 {
			t.Fatalf("got %v at 10s, want 1", got)
		}
		time.Sleep(5 * time.Second)
		if got := b.Balance(); got != 0 {
			t.Fatalf("got %v at 15s, want 0", got)
		}
	})
}

func TestBudgetUpdateKeepsBalance(t *testing.T) {
	tests := []struct {
		name string
		to   middleware.BudgetSettings
		want float64
	}{
		{"same settings", middleware.BudgetSettings{Ratio: 0.5, MinPerSecond: 1, TTL: 10 * time.Second}, 10*0.5 + 10 - 3},
		{"longer TTL keeps records", middleware.BudgetSettings{Ratio: 0.5, MinPerSecond: 1, TTL: 20 * time.Second}, 10*0.5 + 20 - 3},
		{"new ratio applies to recorded deposits", middleware.BudgetSettings{Ratio: 1, MinPerSecond: 1, TTL: 10 * time.Second}, 10 + 10 - 3},
		{"shorter TTL still covering them", middleware.BudgetSettings{Ratio: 0.5, TTL: 5 * time.Second}, 10*0.5 - 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := middleware.NewBudget(middleware.BudgetSettings{Ratio: 0.5, MinPerSecond: 1, TTL: 10 * time.Second}, middleware.BudgetOptions{})
				for range 10 {
					b.Deposit()
				}
				for range 3 {
					b.TryWithdraw()
				}
				time.Sleep(time.Second)
				b.Update(tt.to)
				if got := b.Balance(); math.Abs(got-tt.want) > 1e-9 {
					t.Fatalf("got balance %v, want %v", got, tt.want)
				}
			})
		})
	}
	t.Run("records expire on the new TTL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := middleware.NewBudget(middleware.BudgetSettings{Ratio: 1, TTL: 10 * time.Second}, middleware.BudgetOptions{})
			b.Deposit()
			time.Sleep(4 * time.Second)
			b.Update(middleware.BudgetSettings{Ratio: 1, TTL: 20 * time.Second})
			time.Sleep(10 * time.Second) // 14s: past the old TTL, within the new one
			if got := b.Balance(); got != 1 {
				t.Fatalf("got %v, want 1", got)
			}
			time.Sleep(6 * time.Second) // 20s: gone
			if got := b.Balance(); got != 0 {
				t.Fatalf("got %v, want 0", got)
			}
		})
	})
}

func TestBudgetConcurrentUse(t *testing.T) {
	b := middleware.NewBudget(middleware.BudgetSettings{Ratio: 0.5, TTL: time.Minute}, middleware.BudgetOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				b.Deposit()
				if b.TryWithdraw() {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
				_ = b.Balance()
			}
		})
	}
	wg.Go(func() { b.Update(middleware.BudgetSettings{Ratio: 0.5, TTL: time.Minute}) })
	wg.Wait()
	if allowed > 4000 {
		t.Fatalf("got %d retries allowed, want at most 4000 (half of 8000 deposits)", allowed)
	}
	if got, want := b.Balance(), 4000-float64(allowed); math.Abs(got-want) > 1e-6 {
		t.Fatalf("got balance %v, want %v: a deposit or withdrawal was lost", got, want)
	}
}

func TestRetryBudgetExhaustionAndRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A reserve of 2 retries per 10s, no ratio: under sustained failure
		// only two calls get a retry, then none until the TTL passes.
		b := middleware.NewBudget(middleware.BudgetSettings{MinPerSecond: 0.2, TTL: 10 * time.Second}, middleware.BudgetOptions{})
		ev, rec := newEvents()
		s := fixedSettings()
		s.MaxRetries = 1
		rt := fakert.Status(503)
		retry := middleware.Retry(s, middleware.RetryOptions{Budget: b, Events: ev})(rt)
		call := func() {
			resp, err := retry.RoundTrip(newReq(t, context.Background(), "GET", ""))
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
		}
		for range 5 {
			call()
		}
		if got := rt.Calls(); got != 7 {
			t.Fatalf("got %d calls, want 7 (5 first attempts + 2 retries)", got)
		}
		if got := len(rec.named(middleware.EventRetryBudgetExhausted)); got != 3 {
			t.Fatalf("got %d budget events, want 3", got)
		}
		time.Sleep(10 * time.Second)
		call()
		if got := rt.Calls(); got != 9 {
			t.Fatalf("got %d calls, want 9: the budget should recover after its TTL", got)
		}
	})
}

func BenchmarkBudget(b *testing.B) {
	bu := middleware.NewBudget(middleware.BudgetSettings{Ratio: 0.2, MinPerSecond: 10, TTL: 10 * time.Second}, middleware.BudgetOptions{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bu.Deposit()
		}
	})
}

// TestBudgetDepositsSurviveConcurrentResize guards the lock-free Deposit: a
// deposit racing with an Update that re-slices the window is neither lost
// nor counted twice.
func TestBudgetDepositsSurviveConcurrentResize(t *testing.T) {
	b := middleware.NewBudget(middleware.BudgetSettings{Ratio: 1, TTL: time.Minute}, middleware.BudgetOptions{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				b.Deposit()
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			b.Update(middleware.BudgetSettings{Ratio: 1, TTL: time.Duration(1+i%3) * time.Minute})
		}
	})
	wg.Wait()
	if got := b.Balance(); got != 16000 {
		t.Fatalf("got balance %v, want 16000: a deposit was lost or counted twice", got)
	}
}
