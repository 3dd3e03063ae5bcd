package factory

import "sync"

// coalescer runs fn for its callers one at a time and merges the calls
// that wait: a call made while a run is under way waits for it and then
// shares the single run that starts after it, whose result every caller
// that joined it gets. So each caller's run starts after it asked (a
// reload sees inputs at least as new as its caller's), and a crowd of
// callers costs two runs, not one each. fn must not panic
// (Registry.reload recovers its own). It is safe for concurrent use once
// fn is set.
type coalescer struct {
	fn func() error

	mu      sync.Mutex
	running bool
	next    *coalescedRun // the run that starts after the current one; nil if none is asked for
}

// coalescedRun is one run shared by the callers that joined it.
type coalescedRun struct {
	done    chan struct{}
	err     error
	waiters int // callers that joined it (for tests)
}

// do runs fn, or joins the run that starts after the current one, and
// returns the result of the run it got.
func (c *coalescer) do() error {
	c.mu.Lock()
	if c.running {
		if c.next == nil {
			c.next = &coalescedRun{done: make(chan struct{})}
		}
		n := c.next
		n.waiters++
		c.mu.Unlock()
		<-n.done
		return n.err
	}
	c.running = true
	c.mu.Unlock()
	err := c.fn()
	// Run, on this goroutine, the runs callers asked for meanwhile.
	for {
		c.mu.Lock()
		n := c.next
		c.next = nil
		if n == nil {
			c.running = false
			c.mu.Unlock()
			return err
		}
		c.mu.Unlock()
		n.err = c.fn()
		close(n.done)
	}
}
