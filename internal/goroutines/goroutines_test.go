package goroutines_test

import (
	"context"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/goroutines"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// foreignDone is a parent context whose Done channel the context package
// does not know: deriving from it costs a watcher goroutine.
type foreignDone struct {
	context.Context
	done chan struct{}
}

func (c foreignDone) Done() <-chan struct{} { return c.done }

func TestContextWatchersCountsThisBubblesOnly(t *testing.T) {
	// A watcher outside the bubble is not counted inside it.
	outside, cancelOutside := context.WithCancel(foreignDone{context.Background(), make(chan struct{})})
	defer cancelOutside()
	_ = outside
	synctest.Test(t, func(t *testing.T) {
		if n := goroutines.ContextWatchers(); n != 0 {
			t.Fatalf("%d watchers before any, want 0", n)
		}
		_, cancel := context.WithCancel(foreignDone{context.Background(), make(chan struct{})})
		if n := goroutines.ContextWatchers(); n != 1 {
			t.Errorf("%d watchers for a foreign parent, want 1", n)
		}
		_, cancelLinked := context.WithCancel(t.Context())
		if n := goroutines.ContextWatchers(); n != 1 {
			t.Errorf("%d watchers after a linked derivation, want still 1", n)
		}
		cancelLinked()
		cancel()
		synctest.Wait()
		if n := goroutines.ContextWatchers(); n != 0 {
			t.Errorf("%d watchers after cancel, want 0", n)
		}
	})
	if n := goroutines.ContextWatchers(); n != 1 {
		t.Errorf("%d watchers outside any bubble, want the one started there", n)
	}
}
