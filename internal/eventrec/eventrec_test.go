package eventrec_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/eventrec"
	"github.com/switchboard-http/switchboard/middleware"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRecorderKeepsEveryEventInOrder(t *testing.T) {
	var r eventrec.Recorder
	ctx := context.Background()
	r.OnEvent(ctx, middleware.Event{Name: "retry.attempt"})
	r.OnEvent(ctx, middleware.Event{Name: "circuit.opened", Err: errors.New("boom")})
	r.OnEvent(ctx, middleware.Event{Name: "retry.attempt"})

	if got, want := r.Names(), []string{"retry.attempt", "circuit.opened", "retry.attempt"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if got := len(r.Named("retry.attempt")); got != 2 {
		t.Errorf("len(Named(retry.attempt)) = %d, want 2", got)
	}
	if got := r.Named("hedge.sent"); got != nil {
		t.Errorf("Named(hedge.sent) = %v, want nil", got)
	}
	if got := r.Counts(); got["retry.attempt"] != 2 || got["circuit.opened"] != 1 || len(got) != 2 {
		t.Errorf("Counts() = %v, want retry.attempt:2 circuit.opened:1", got)
	}
	if s := r.String(); strings.Count(s, "\n") != 3 || !strings.Contains(s, "err=boom") {
		t.Errorf("String() = %q, want three lines, one with err=boom", s)
	}
}

func TestRecorderIsSafeForConcurrentUse(t *testing.T) {
	var r eventrec.Recorder
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				r.OnEvent(context.Background(), middleware.Event{Name: "x"})
				_ = r.Counts()
			}
		})
	}
	wg.Wait()
	if got := r.Counts()["x"]; got != 800 {
		t.Errorf("Counts()[x] = %d, want 800", got)
	}
}
