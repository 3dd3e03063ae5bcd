package reload

import (
	"sync"
	"time"
)

// debouncer turns a stream of events into calls of fn: each value received from in
// (re)starts a quiet period of delay, and fn runs when one ends without a further
// event, or when maxWait has passed since the first event of the burst, whichever
// comes first. So a burst of writes is one call, and writes that never pause are
// still a call at least once per maxWait. A maxWait of zero (or less) is no bound: a
// pure trailing debounce, which events closer together than delay postpone
// indefinitely. A maxWait below delay is taken as delay.
//
// fn runs on the debouncer's own goroutine, never concurrently with itself. Events that
// arrive while fn runs are not lost: the first one received afterwards starts a new
// quiet period. close is safe for concurrent use; the other fields are not for callers.
type debouncer struct {
	in      <-chan struct{}
	delay   time.Duration
	maxWait time.Duration
	fn      func()

	stop      chan struct{} // closed by close
	done      chan struct{} // closed when run returns
	closeOnce sync.Once
}

// startDebouncer starts a debouncer reading in. A closed in stops it as close does.
func startDebouncer(in <-chan struct{}, delay, maxWait time.Duration, fn func()) *debouncer {
	if maxWait > 0 && maxWait < delay {
		maxWait = delay
	}
	d := &debouncer{
		in:      in,
		delay:   delay,
		maxWait: maxWait,
		fn:      fn,
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go d.run()
	return d
}

func (d *debouncer) run() {
	defer close(d.done)
	timer := time.NewTimer(d.delay)
	timer.Stop()
	defer timer.Stop()
	var (
		due      <-chan time.Time // nil while no quiet period is running
		deadline time.Time        // with maxWait: when the pending burst fires at the latest
	)
	for {
		select {
		case <-d.stop:
			return
		case _, ok := <-d.in:
			if !ok {
				return
			}
			wait := d.delay
			if d.maxWait > 0 {
				now := time.Now()
				if due == nil { // the first event of a burst
					deadline = now.Add(d.maxWait)
				}
				wait = min(wait, deadline.Sub(now))
			}
			timer.Reset(wait) // Go ≥ 1.23: no stale value to drain
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

// Debouncer turns a stream of Trigger calls into calls of a function: each
// Trigger (re)starts a quiet period, and the function runs when one ends
// without a further Trigger, or at the latest a maximum wait after the first
// Trigger of a burst, so that a stream that never pauses is still handled.
// It is what a Watcher uses for file events; code with events of its own
// (a config store's notifications) uses it to debounce them the same way.
// Make one with NewDebouncer; the zero value is not usable. Its methods are
// safe for concurrent use.
type Debouncer struct {
	in chan struct{}
	d  *debouncer
}

// NewDebouncer starts a Debouncer that calls fn, on a goroutine of its own
// and never concurrently with itself, delay after the last Trigger of a
// burst and at most maxWait after its first. A delay of zero (or less)
// means DefaultDebounce; a maxWait of zero (or less) means DefaultMaxDebounce,
// and one below delay is taken as delay. Close it to stop its goroutine.
func NewDebouncer(delay, maxWait time.Duration, fn func()) *Debouncer {
	o := Options{Debounce: delay, MaxDebounce: maxWait}.withDefaults()
	in := make(chan struct{}, 1)
	return &Debouncer{in: in, d: startDebouncer(in, o.Debounce, o.MaxDebounce, fn)}
}

// Trigger records an event. It never blocks: an event already waiting to
// be seen says the same thing.
func (d *Debouncer) Trigger() { signal(d.in) }

// Close stops the Debouncer, dropping a pending call, and waits for a call
// in progress. After it returns fn is never called again. It is
// idempotent, and must not be called from fn.
func (d *Debouncer) Close() { d.d.close() }
