package reload

import "time"

// Delays of the two retry loops: re-adding a watch on a directory that vanished, and
// restarting fsnotify after it failed.
const (
	dirRetryMin     = 100 * time.Millisecond
	dirRetryMax     = time.Second
	restartRetryMin = 100 * time.Millisecond
	restartRetryMax = 5 * time.Second
)

// backoff is an exponential delay: min, 2·min, 4·min, … capped at max. The zero value
// is not usable; build one with a composite literal. It is not safe for concurrent use.
type backoff struct {
	min, max time.Duration
	cur      time.Duration // 0 before the first next or after reset
}

// next returns the delay to wait now and doubles the one after it.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	}
	d := b.cur
	b.cur = min(2*b.cur, b.max)
	return d
}

// reset makes the next delay min again.
func (b *backoff) reset() { b.cur = 0 }
