package middleware

import (
	"math"
	"sync"
	"sync/atomic"
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
// testing/synctest bubble moves it. A Budget is safe for concurrent use.
// Deposit, once per call, is lock-free while its slice is current (one
// atomic compare-and-swap); the other methods, and Deposit when a slice
// starts, take a mutex for a few nanoseconds.
type Budget struct {
	mu sync.Mutex
	// shape is nil without a budget (zero TTL). Deposit reads it without mu;
	// it is replaced, never changed, under mu, after epoch is set.
	shape atomic.Pointer[budgetShape]
	epoch time.Time // slot times are offsets from it (monotonic clock); set once
	// Guarded by mu:
	ratio     float64
	minPerSec float64
	ttl       time.Duration
	width     int64 // slot width in ns: ttl/budgetSlots, at least 1
	slots     [budgetSlots]budgetSlot
}

// budgetShape is what the lock-free Deposit needs to find its slot.
type budgetShape struct {
	width int64 // as Budget.width
}

// budgetSlot counts the deposits and withdrawals of one slice of the window.
type budgetSlot struct {
	// dep packs the slice's number plus one (the high 32 bits, truncated;
	// 0 for no slice) and its deposit count (the low 32 bits), so that
	// Deposit checks the slice and counts in one compare-and-swap. Its slice
	// part is written only under mu; the count is added to without it.
	dep atomic.Uint64
	// Guarded by mu:
	start       int64 // offset of the slice's start from epoch, in ns; -1 for none
	withdrawals int64
	overflow    int64 // deposits beyond dep's 32-bit count
}

// depFull is the largest deposit count dep holds; more go to overflow.
const depFull = 1<<32 - 1

// depTag returns the slice part of dep for the slice starting at start
// (a multiple of width); 0 when it cannot be told from "no slice", which
// sends Deposit to its locked path.
func depTag(start, width int64) uint64 { return uint64(uint32(start/width + 1)) }

// deposits returns the slot's deposit count. The caller holds mu.
func (sl *budgetSlot) deposits() int64 { return int64(sl.dep.Load()&depFull) + sl.overflow }

// reset makes the slot hold the slice starting at start, empty. The caller
// holds mu.
func (sl *budgetSlot) reset(start, width int64) {
	sl.start, sl.withdrawals, sl.overflow = start, 0, 0
	tag := uint64(0)
	if start >= 0 {
		tag = depTag(start, width)
	}
	sl.dep.Store(tag << 32)
}

// add counts n deposits into the slot. The caller holds mu; a lock-free
// Deposit may add at the same time.
func (sl *budgetSlot) add(n int64) {
	for n > 0 {
		v := sl.dep.Load()
		room := int64(depFull - v&depFull)
		if room == 0 {
			sl.overflow += n
			return
		}
		k := min(n, room)
		if sl.dep.CompareAndSwap(v, v+uint64(k)) {
			n -= k
		}
	}
}

// NewBudget returns a budget with the settings s (see Budget for what zero
// values mean; negative values count as zero).
func NewBudget(s BudgetSettings) *Budget {
	b := &Budget{epoch: time.Now()}
	b.set(s)
	for i := range b.slots {
		b.slots[i].reset(-1, b.width)
	}
	return b
}

// set applies s and publishes the new shape. The caller holds b.mu or owns
// b, and has set b.epoch.
func (b *Budget) set(s BudgetSettings) {
	b.ratio = max(s.Ratio, 0)
	b.minPerSec = max(s.MinPerSecond, 0)
	b.ttl = max(s.TTL, 0)
	b.width = max(int64(b.ttl)/budgetSlots, 1)
	if b.ttl == 0 {
		b.shape.Store(nil)
	} else if sh := b.shape.Load(); sh == nil || sh.width != b.width {
		b.shape.Store(&budgetShape{width: b.width})
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
	now := b.now()
	oldWidth, oldTTL := b.width, b.ttl
	if max(int64(max(s.TTL, 0))/budgetSlots, 1) == oldWidth {
		b.set(s)
		return
	}
	// Re-slice: take each slot's counts at once (a lock-free Deposit racing
	// with this either lands before the swap, and is carried over, or sees
	// no slice and waits for mu), then move each slot that is still live
	// into the new slot that holds its start time, dropping what the new
	// window no longer covers.
	type old struct{ start, deposits, withdrawals int64 }
	var olds [budgetSlots]old
	for i := range b.slots {
		sl := &b.slots[i]
		olds[i] = old{sl.start, int64(sl.dep.Swap(0)&depFull) + sl.overflow, sl.withdrawals}
	}
	b.set(s)
	for i := range b.slots {
		b.slots[i].reset(-1, b.width)
	}
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
			sl.reset(start, b.width)
		default:
			continue
		}
		sl.add(o.deposits)
		sl.withdrawals += o.withdrawals
	}
}

// Deposit records a first attempt. It does nothing on a nil budget or with a
// zero TTL. While the present slice's slot is current it reads the clock once
// and takes no lock: one compare-and-swap checks the slice and counts.
func (b *Budget) Deposit() {
	if b == nil {
		return
	}
	sh := b.shape.Load()
	if sh == nil {
		return
	}
	// One division: q numbers the slice, which is slot q%budgetSlots and
	// tagged q+1 (depTag without dividing again).
	q := b.now() / sh.width
	sl := &b.slots[q%budgetSlots]
	if tag := uint64(uint32(q + 1)); tag != 0 {
		for {
			v := sl.dep.Load()
			if v>>32 != tag || v&depFull == depFull || b.shape.Load() != sh {
				break // another slice (or a full count, or a new shape): take mu
			}
			if sl.dep.CompareAndSwap(v, v+1) {
				return
			}
		}
	}
	b.mu.Lock()
	if b.ttl > 0 {
		b.current().add(1)
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

// current returns the slot of the present slice, resetting it if it still
// holds an older slice. The caller holds b.mu and has checked b.ttl > 0.
func (b *Budget) current() *budgetSlot {
	start := b.now() / b.width * b.width
	sl := &b.slots[(start/b.width)%budgetSlots]
	if sl.start != start {
		sl.reset(start, b.width)
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
			deposits += sl.deposits()
			withdrawals += sl.withdrawals
		}
	}
	return b.ratio*float64(deposits) + b.minPerSec*b.ttl.Seconds() - float64(withdrawals)
}
