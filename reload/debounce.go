package reload

import (
	"sync"
	"time"
)

// debouncer turns a stream of events into calls of fn: each value received from in
// (re)starts a quiet period of delay, and fn runs when one ends without a further
// event. It is a pure trailing debounce: events closer together than delay postpone fn
// indefinitely, which is what a burst of writes needs.
//
// fn runs on the debouncer's own goroutine, never concurrently with itself. Events that
// arrive while fn runs are not lost: the first one received afterwards starts a new
// quiet period. close is safe for concurrent use; the other fields are not for callers.
type debouncer struct {
	in    <-chan struct{}
	delay time.Duration
	fn    func()

	stop      chan struct{} // closed by close
	done      chan struct{} // closed when run returns
	closeOnce sync.Once
}

// startDebouncer starts a debouncer reading in. A closed in stops it as close does.
func startDebouncer(in <-chan struct{}, delay time.Duration, fn func()) *debouncer {
	d := &debouncer{
		in:    in,
		delay: delay,
		fn:    fn,
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go d.run()
	return d
}

func (d *debouncer) run() {
	defer close(d.done)
	timer := time.NewTimer(d.delay)
	timer.Stop()
	defer timer.Stop()
	var due <-chan time.Time // nil while no quiet period is running
	for {
		select {
		case <-d.stop:
			return
		case _, ok := <-d.in:
			if !ok {
				return
			}
			timer.Reset(d.delay) // Go ≥ 1.23: no stale value to drain
			due = timer.C
		case <-due:
			due = nil
			select { // close may have raced with the timer; it wins
			case <-d.stop:
				return
			default:
			}
			d.fn()
		}
	}
}

// close stops the debouncer, dropping a pending quiet period, and waits for its
// goroutine (and an fn in progress) to end. After it returns fn is never called again.
// It is idempotent. It must not be called from fn, which it would wait for.
func (d *debouncer) close() {
	d.closeOnce.Do(func() { close(d.stop) })
	<-d.done
}
