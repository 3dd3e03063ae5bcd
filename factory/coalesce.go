package factory

import "sync"

// coalescer runs a function for callers one at a time and merges the calls
// that wait: a call made while a run is under way waits for it and then
// shares the single run that starts after it, whose result every caller
// that joined it gets. So each caller's run starts after it asked (it sees
// inputs at least as new as its own), and a crowd of callers costs two
// runs, not one each. f must not panic (Registry.reload recovers its
// own). The zero value is ready; it is safe for concurrent
// use.
type coalescer struct {
	mu      sync.Mutex
	running bool
	next    *coalescedRun // the run that starts after the current one; nil if none is asked for
}

// coalescedRun is one run shared by the callers that joined it.
type coalescedRun struct {
	done chan struct{}
	err  error
}

// do runs f, or joins the run that starts after the current one, and
// returns the result of the run it got.
func (c *coalescer) do(f func() error) error {
	c.mu.Lock()
	if c.running {
		if c.next == nil {
			c.next = &coalescedRun{done: make(chan struct{})}
		}
		n := c.next
		c.mu.Unlock()
		<-n.done
		return n.err
	}
	c.running = true
	c.mu.Unlock()
	err := f()
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
		n.err = f()
		close(n.done)
	}
}
