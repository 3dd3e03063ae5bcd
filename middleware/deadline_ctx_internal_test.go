package middleware

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// isDone reports whether ch is closed, without waiting.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestDeadlineCtxExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type key struct{}
		parent := context.WithValue(t.Context(), key{}, "v")
		c := new(deadlineCtx)
		start := time.Now()
		c.start(parent, time.Now(), time.Second)
		if dl, ok := c.Deadline(); !ok || !dl.Equal(start.Add(time.Second)) {
			t.Errorf("Deadline: got %v %v, want %v true", dl, ok, start.Add(time.Second))
		}
		if c.Value(key{}) != "v" || ownDeadlineFired(context.WithValue(c, key{}, "w")) {
			t.Error("Value not passed to the parent, or fired before the deadline")
		}
		done := c.Done()
		child, cancelChild := context.WithCancel(c)
		defer cancelChild()
		ran := make(chan struct{})
		context.AfterFunc(c, func() { close(ran) })

		time.Sleep(time.Second - time.Nanosecond)
		if isDone(done) || c.Err() != nil || child.Err() != nil {
			t.Fatal("done before the deadline")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !isDone(done) || !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("at the deadline: done %v, Err %v; want done, DeadlineExceeded", isDone(done), c.Err())
		}
		if !errors.Is(child.Err(), context.DeadlineExceeded) || !isDone(ran) {
			t.Errorf("derived: Err %v, AfterFunc ran %v; want DeadlineExceeded, true", child.Err(), isDone(ran))
		}
		// Through a value context, as the breaker sees it.
		if !ownDeadlineFired(context.WithValue(c, key{}, "w")) {
			t.Error("ownDeadlineFired: false for a context its own deadline ended")
		}
		if !errors.Is(context.Cause(c), context.DeadlineExceeded) {
			t.Errorf("Cause: got %v, want DeadlineExceeded", context.Cause(c))
		}
	})
}

func TestDeadlineCtxOwnFiredStaysWhenTheParentEndsLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		c := new(deadlineCtx)
		c.start(parent, time.Now(), time.Second)
		time.Sleep(time.Second)
		synctest.Wait()
		cancel() // the caller's context ends after the deadline passed
		if !c.ownFired() || !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("ownFired %v, Err %v; want true, DeadlineExceeded", c.ownFired(), c.Err())
		}
	})
}

func TestDeadlineCtxFollowsItsParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		c := new(deadlineCtx)
		c.start(parent, time.Now(), time.Hour)
		child, cancelChild := context.WithTimeout(c, 2*time.Hour)
		defer cancelChild()
		if dl, _ := child.Deadline(); !dl.Equal(time.Now().Add(time.Hour)) {
			t.Errorf("child's deadline %v, want the earlier one of c", dl)
		}
		cancel()
		synctest.Wait()
		if !errors.Is(c.Err(), context.Canceled) || !isDone(c.Done()) || !errors.Is(child.Err(), context.Canceled) {
			t.Fatalf("after the parent's cancel: Err %v, child %v; want Canceled", c.Err(), child.Err())
		}
		if c.ownFired() {
			t.Error("ownFired: true for the caller's cancellation")
		}
		time.Sleep(2 * time.Hour) // the timer must be gone: nothing changes
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("Err changed to %v after the deadline", c.Err())
		}
	})
}

func TestDeadlineCtxParentAlreadyDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		cancel()
		c := new(deadlineCtx)
		c.start(parent, time.Now(), time.Hour)
		if !errors.Is(c.Err(), context.Canceled) || !isDone(c.Done()) {
			t.Errorf("Err %v; want Canceled at once", c.Err())
		}
		time.Sleep(2 * time.Hour) // no timer was started: nothing changes
		if !errors.Is(c.Err(), context.Canceled) || c.ownFired() {
			t.Errorf("Err %v, ownFired %v after the deadline", c.Err(), c.ownFired())
		}
	})
}

func TestDeadlineCtxStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		defer cancel()
		c := new(deadlineCtx)
		c.start(parent, time.Now(), time.Hour)
		child, cancelChild := context.WithCancel(c)
		defer cancelChild()
		var calls atomic.Int32
		stopAfter := context.AfterFunc(c, func() { calls.Add(1) })
		unregistered := context.AfterFunc(c, func() { t.Error("an unregistered func ran") })
		if !unregistered() {
			t.Error("stop of a pending AfterFunc: got false, want true")
		}
		c.stop()
		synctest.Wait()
		if !errors.Is(c.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) || calls.Load() != 1 {
			t.Fatalf("after stop: Err %v, child %v, AfterFunc calls %d", c.Err(), child.Err(), calls.Load())
		}
		if stopAfter() {
			t.Error("stop after the func ran: got true, want false")
		}
		c.stop() // idempotent
		cancel() // the parent registration is gone: nothing to call
		time.Sleep(2 * time.Hour)
		if calls.Load() != 1 || c.ownFired() {
			t.Errorf("calls %d, ownFired %v after a second stop and the deadline", calls.Load(), c.ownFired())
		}
	})
}

func TestDeadlineCtxAfterFuncOnDoneContext(t *testing.T) {
	// The context package registers only with a context not yet done; one
	// that ends in between gets f on a goroutine of its own, never on the
	// caller's (which holds a lock f takes).
	synctest.Test(t, func(t *testing.T) {
		c := new(deadlineCtx)
		c.start(t.Context(), time.Now(), time.Second)
		c.stop()
		ran := make(chan struct{})
		stop := c.AfterFunc(func() { close(ran) })
		synctest.Wait()
		if !isDone(ran) || stop() {
			t.Errorf("ran %v, stop %v; want true, false", isDone(ran), stop())
		}
	})
}

func TestDeadlineCtxDerivedContextsStartNoGoroutine(t *testing.T) {
	// The context package starts a goroutine per derived context of a
	// foreign Context type unless it has an AfterFunc method; a transport
	// derives one per request.
	c := new(deadlineCtx)
	c.start(context.Background(), time.Now(), time.Hour)
	defer c.stop()
	before := runtime.NumGoroutine()
	var cancels []context.CancelFunc
	for range 10 {
		_, cancel := context.WithCancelCause(c)
		cancels = append(cancels, func() { cancel(nil) })
	}
	if after := runtime.NumGoroutine(); after != before {
		t.Errorf("goroutines: %d before deriving 10 contexts, %d after; want no new ones", before, after)
	}
	for _, cancel := range cancels {
		cancel()
	}
	if c.afters != nil {
		t.Error("cancelled children still registered")
	}
}

func TestDeadlineCtxConcurrentUse(t *testing.T) {
	// Under -race: Done, Err, derived contexts and the end racing.
	for range 50 {
		c := new(deadlineCtx)
		c.start(context.Background(), time.Now(), time.Microsecond)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				child, cancel := context.WithCancel(c)
				<-child.Done()
				cancel()
				_ = c.Err()
			})
		}
		wg.Go(c.stop)
		wg.Wait()
		if c.Err() == nil {
			t.Fatal("Err nil after the end")
		}
	}
}
