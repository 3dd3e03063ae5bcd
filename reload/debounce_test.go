package reload

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The debouncer runs inside synctest bubbles: time is fake, so every expected call
// time is exact, and synctest.Test fails if the debouncer's goroutine outlives it.

const testDelay = 100 * time.Millisecond

// calls records the fake times at which fn ran.
type calls struct{ at []time.Time }

func (c *calls) fn() { c.at = append(c.at, time.Now()) }

func TestDebounceSingleEventFiresAfterExactlyDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan struct{})
		var c calls
		d := startDebouncer(in, testDelay, 0, c.fn)
		defer d.close()

		start := time.Now()
		in <- struct{}{}
		time.Sleep(10 * testDelay)
		synctest.Wait()
		if len(c.at) != 1 {
			t.Fatalf("got %d calls, want 1", len(c.at))
		}
		if got := c.at[0].Sub(start); got != testDelay {
			t.Errorf("fn ran at +%v, want +%v", got, testDelay)
		}
	})
}

func TestDebounceEventsEvery50msForOneSecondFireOnceAfterLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan struct{})
		var c calls
		d := startDebouncer(in, testDelay, 0, c.fn)
		defer d.close()

		var last time.Time
		for range 21 { // t = 0, 50ms, …, 1s
			in <- struct{}{}
			last = time.Now()
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(10 * testDelay)
		synctest.Wait()
		if len(c.at) != 1 {
			t.Fatalf("got %d calls, want 1", len(c.at))
		}
		if got := c.at[0].Sub(last); got != testDelay {
			t.Errorf("fn ran at last event +%v, want +%v", got, testDelay)
		}
	})
}

func TestDebounceCloseDuringPendingDropsCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan struct{})
		var c calls
		d := startDebouncer(in, testDelay, 0, c.fn)

		in <- struct{}{}
		time.Sleep(testDelay / 2)
		d.close()
		d.close() // idempotent
		time.Sleep(10 * testDelay)
		synctest.Wait()
		if len(c.at) != 0 {
			t.Errorf("got %d calls after close, want 0", len(c.at))
		}
		// synctest.Test itself fails if the debouncer's goroutine is still running.
	})
}

func TestDebounceEventDuringFnStartsNewQuietPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan struct{}, 1) // like the Watcher's: sends never block
		var c calls
		fn := func() {
			c.fn()
			if len(c.at) == 1 {
				in <- struct{}{} // an event while fn runs
				time.Sleep(time.Second)
			}
		}
		d := startDebouncer(in, testDelay, 0, fn)
		defer d.close()

		start := time.Now()
		in <- struct{}{}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		want := []time.Duration{testDelay, testDelay + time.Second + testDelay}
		if len(c.at) != len(want) {
			t.Fatalf("got %d calls, want %d", len(c.at), len(want))
		}
		for i, at := range c.at {
			if got := at.Sub(start); got != want[i] {
				t.Errorf("call %d at +%v, want +%v", i, got, want[i])
			}
		}
	})
}

func TestDebounceCloseWaitsForRunningFn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan struct{})
		var ended time.Time
		fn := func() {
			time.Sleep(time.Second)
			ended = time.Now()
		}
		d := startDebouncer(in, testDelay, 0, fn)

		in <- struct{}{}
		time.Sleep(testDelay + time.Second/2) // fn is half-way through
		d.close()
		if ended.IsZero() {
			t.Fatal("close returned while fn was still running")
		}
		if got, want := time.Now(), ended; !got.Equal(want) {
			t.Errorf("close returned at %v, want when fn ended, %v", got, want)
		}
	})
}

func TestDebounceClosedInputStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan struct{})
		d := startDebouncer(in, testDelay, 0, func() { t.Error("fn called") })
		close(in)
		synctest.Wait()
		select {
		case <-d.done:
		default:
			t.Fatal("debouncer still running after its input was closed")
		}
		d.close()
	})
}

// Events that never pause for the quiet period are still handled at least
// once per maxWait: a file rewritten every 70 ms with a 100 ms debounce and
// a 1 s max wait reloads at 1 s (the max wait from the first event), then
// 100 ms after the last event of the next burst. Before, the debounce was
// purely trailing and postponed the call until the events stopped.
func TestDebounceMaxWaitBoundsContinuousEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan struct{})
		var c calls
		d := startDebouncer(in, testDelay, time.Second, c.fn)
		defer d.close()

		start := time.Now()
		for i := range 21 { // t = 0, 70ms, …, 1400ms
			if i > 0 {
				time.Sleep(70 * time.Millisecond)
			}
			in <- struct{}{}
		}
		time.Sleep(10 * testDelay)
		synctest.Wait()
		want := []time.Duration{time.Second, 1500 * time.Millisecond}
		if len(c.at) != len(want) {
			t.Fatalf("got %d calls at %v, want %d at %v", len(c.at), c.at, len(want), want)
		}
		for i, at := range c.at {
			if got := at.Sub(start); got != want[i] {
				t.Errorf("call %d at +%v, want +%v", i+1, got, want[i])
			}
		}
	})
}

// The exported Debouncer takes its defaults from Options: a zero delay is
// DefaultDebounce, a zero max wait DefaultMaxDebounce.
func TestDebouncerDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu sync.Mutex // Trigger does not synchronise with fn as a channel send does
			c  calls
		)
		d := NewDebouncer(0, 0, func() { mu.Lock(); defer mu.Unlock(); c.fn() })
		defer d.Close()
		snapshot := func() []time.Time { mu.Lock(); defer mu.Unlock(); return append([]time.Time(nil), c.at...) }
		start := time.Now()
		for range 30 { // every 50 ms for 1.5 s: never a quiet 100 ms
			d.Trigger()
			time.Sleep(50 * time.Millisecond)
		}
		synctest.Wait()
		at := snapshot()
		if len(at) == 0 {
			t.Fatal("no call during 1.5 s of triggers every 50 ms")
		}
		if got := at[0].Sub(start); got != DefaultMaxDebounce {
			t.Fatalf("first call at +%v, want +%v (DefaultMaxDebounce)", got, DefaultMaxDebounce)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		at = snapshot()
		if got := at[len(at)-1].Sub(start); got != 1500*time.Millisecond-50*time.Millisecond+DefaultDebounce {
			t.Fatalf("last call at +%v, want +%v (DefaultDebounce after the last trigger)", got, 1500*time.Millisecond-50*time.Millisecond+DefaultDebounce)
		}
	})
}
