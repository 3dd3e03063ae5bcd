package factory

import "sync"

// reportQueue hands the outcomes of reload attempts to a teller (log,
// Observer, OnReload) in the order the attempts ran, with no lock of the
// registry held, so that a callback may call the registry (Status, Apply,
// Reload) without deadlocking. Attempts push their outcome while they still
// hold the reload lock; every caller of Apply or Reload then drains. One
// drainer tells at a time: a caller that finds another draining leaves its
// outcome to it, so a callback that calls Reload does not wait for itself.
// The zero value is ready; it is safe for concurrent use.
type reportQueue struct {
	mu       sync.Mutex
	pending  []outcome
	draining bool
}

// push queues out.
func (q *reportQueue) push(out outcome) {
	q.mu.Lock()
	q.pending = append(q.pending, out)
	q.mu.Unlock()
}

// drain tells every queued outcome, unless another goroutine is already
// at it (then that one tells them all).
func (q *reportQueue) drain(tell func(outcome)) {
	for {
		q.mu.Lock()
		if q.draining || len(q.pending) == 0 {
			q.mu.Unlock()
			return
		}
		q.draining = true
		out := q.pending[0]
		q.pending = q.pending[1:]
		q.mu.Unlock()
		func() {
			defer func() {
				// A teller that panics (a log handler, say) loses its one
				// outcome, never the queue nor the caller's goroutine.
				_ = recover()
				q.mu.Lock()
				q.draining = false
				q.mu.Unlock()
			}()
			tell(out)
		}()
	}
}
