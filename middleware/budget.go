package middleware

import (
	"math"
	"sync"
	"time"
)

// budgetSlots is how many slices the budget's TTL window is cut into, as in
// Finagle's WindowedAdder: deposits and withdrawals leave the window one
// slice (TTL/10) at a time.
const budgetSlots = 10

// budgetEpsilon absorbs float64 rounding in Ratio·deposits, so that five
// deposits at Ratio 0.2 buy exactly one retry.
const budgetEpsilon = 1e-9

// Budget caps retries across all the calls of a client, after Finagle's
// RetryBudget (a TokenRetryBudget over a LeakyBucket): every first attempt
// deposits Ratio of a token, every retry withdraws a whole one, and both
// count only for TTL. On top, MinPerSecond×TTL tokens are a reserve that is
// always there, so that a quiet client can still retry. A retry is allowed
// when the balance
//
//	Ratio·(deposits in the last TTL) + MinPerSecond·TTL − (withdrawals in the last TTL)
//
// is at least one token. Under sustained failure retries thus add at most
// Ratio to the load (plus MinPerSecond a second), and the budget recovers on
// its own as old withdrawals age out.
//
// A zero TTL means no budget: every retry is allowed. A zero Ratio and zero
// MinPerSecond (with a TTL) allow no retries at all. A nil *Budget is valid
// and allows every retry. Create one with NewBudget; the zero Budget value
// behaves as one with a zero TTL.
//
// The window is cut into ten slices of TTL/10, so a deposit counts for
// between 0.9·TTL and TTL. Time is read with time.Now (monotonic), so a
// testing/synctest bubble moves it. A Budget is safe for concurrent use:
// every method takes its mutex for a few nanoseconds, as Finagle's budget
// is synchronized.
type Budget struct {
	mu    sync.Mutex
	epoch time.Time // slot times are offsets from it (monotonic clock); set once
	// Guarded by mu:
	ratio     float64
	minPerSec float64
	ttl       time.Duration
	width     int64 // slot width in ns: ttl/budgetSlots, at least 1
	slots     [budgetSlots]budgetSlot
}

// budgetSlot counts the deposits and withdrawals of one slice of the
// window. It is guarded by the Budget's mu.
type budgetSlot struct {
	start       int64 // offset of the slice's start from epoch, in ns; -1 for none
	deposits    int64
	withdrawals int64
}

// BudgetOptions are the code-only options of NewBudget. There are none
// yet: the zero value is the only one, and NewBudget takes it so that every
// stateful component is made the same way, NewX(settings, XOptions).
type BudgetOptions struct{}

// NewBudget returns a budget with the settings s (see Budget for what zero
// values mean; negative values count as zero).
func NewBudget(s BudgetSettings, _ BudgetOptions) *Budget {
	b := &Budget{epoch: time.Now()}
	b.set(s)
	b.clear()
	return b
}

// set applies s. The caller holds b.mu or owns b.
func (b *Budget) set(s BudgetSettings) {
	b.ratio = max(s.Ratio, 0)
	b.minPerSec = max(s.MinPerSecond, 0)
	b.ttl = max(s.TTL, 0)
	b.width = max(int64(b.ttl)/budgetSlots, 1)
}

// clear empties every slot. The caller holds b.mu or owns b.
func (b *Budget) clear() {
	for i := range b.slots {
		b.slots[i] = budgetSlot{start: -1}
	}
}

// Update retunes the budget in place. Deposits and withdrawals recorded
// within the new TTL keep counting; a longer TTL lets them count longer, a
// shorter one drops those that are now too old. Setting a zero TTL turns
// the budget off (and forgets what was recorded).
func (b *Budget) Update(s BudgetSettings) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.epoch.IsZero() {
		b.epoch = time.Now()
	}
	if max(int64(max(s.TTL, 0))/budgetSlots, 1) == b.width {
		b.set(s)
		return
	}
	// Re-slice: move each slot that is still live into the new slot that
	// holds its start time, dropping what the new window no longer covers.
	now, oldTTL, olds := b.now(), b.ttl, b.slots
	b.set(s)
	b.clear()
	if b.ttl == 0 || oldTTL == 0 {
		return
	}
	for _, o := range olds {
		if o.start < 0 || o.start <= now-int64(oldTTL) {
			continue
		}
		start := o.start / b.width * b.width
		if start <= now-int64(b.ttl) {
			continue
		}
		sl := &b.slots[(start/b.width)%budgetSlots]
		switch {
		case sl.start == start:
		case sl.start < start:
			*sl = budgetSlot{start: start}
		default:
			continue
		}
		sl.deposits += o.deposits
		sl.withdrawals += o.withdrawals
	}
}

// Deposit records a first attempt. It does nothing on a nil budget or with a
// zero TTL.
func (b *Budget) Deposit() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.ttl > 0 {
		b.current().deposits++
	}
	b.mu.Unlock()
}

// TryWithdraw takes one retry token and reports whether there was one. A
// nil budget, or one with a zero TTL, always has one.
func (b *Budget) TryWithdraw() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ttl == 0 {
		return true
	}
	if b.balance() < 1-budgetEpsilon {
		return false
	}
	b.current().withdrawals++
	return true
}

// Balance returns how many retries the budget would allow now (it may be
// fractional, and negative after Update lowered the ratio). A nil budget or a
// zero TTL gives +Inf. It is meant for status pages and tests.
func (b *Budget) Balance() float64 {
	if b == nil {
		return math.Inf(1)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ttl == 0 {
		return math.Inf(1)
	}
	return b.balance()
}

// now returns the monotonic time since epoch in ns. The caller holds b.mu.
func (b *Budget) now() int64 { return int64(time.Since(b.epoch)) }

// current returns the slot of the present slice, emptying it if it still
// holds an older slice. The caller holds b.mu and has checked b.ttl > 0.
func (b *Budget) current() *budgetSlot {
	q := b.now() / b.width
	sl := &b.slots[q%budgetSlots]
	if start := q * b.width; sl.start != start {
		*sl = budgetSlot{start: start}
	}
	return sl
}

// balance computes the balance over the live slots. The caller holds b.mu
// and has checked b.ttl > 0.
func (b *Budget) balance() float64 {
	now := b.now()
	var deposits, withdrawals int64
	for i := range b.slots {
		sl := &b.slots[i]
		if sl.start >= 0 && sl.start > now-int64(b.ttl) {
			deposits += sl.deposits
			withdrawals += sl.withdrawals
		}
	}
	return b.ratio*float64(deposits) + b.minPerSec*b.ttl.Seconds() - float64(withdrawals)
}
