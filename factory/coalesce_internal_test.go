package factory

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Calls made while a run is under way share one run that starts after it:
// ten callers during a run cost one more run, not ten.
func TestCoalescerJoinsWaitingCallsIntoOneLaterRun(t *testing.T) {
	var runs atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	c := coalescer{fn: func() error {
		if runs.Add(1) == 1 {
			close(entered)
			<-release
		}
		return nil
	}}
	first := make(chan error, 1)
	go func() { first <- c.do() }()
	<-entered

	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.do(); err != nil {
				t.Error(err)
			}
		}()
	}
	for parked := 0; parked < 10; { // every caller waits on the next run
		c.mu.Lock()
		if c.next != nil {
			parked = c.next.waiters
		}
		c.mu.Unlock()
		runtime.Gosched() // let the callers run on a loaded machine
	}
	close(release)
	<-first
	wg.Wait()
	if got := runs.Load(); got != 2 {
		t.Fatalf("runs: got %d, want 2 (the first, then one for all ten waiters)", got)
	}
}
